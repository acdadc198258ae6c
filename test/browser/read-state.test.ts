// Read state in the web UI (docs/PROTOCOL.md §15), in Chromium against the example server: two
// browser contexts are two devices. An answer in a channel neither shows puts an unread badge on it
// on both; a tab that is hidden marks nothing; once it shows the channel, visible, the badge clears
// on both devices.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { GatewayClient } from "chat-gateway/client";
import type { RunningServer } from "../../examples/server/server.js";
import { recordingClient, startExample, tempDir, wsUrl } from "../client/helpers.js";
import { launchChromium, missingChromium, poll, resultsDir, watchProblems } from "./browser.js";

let server: RunningServer;
let cleanup: () => Promise<void>;
let browser: Browser;
let agent: GatewayClient;
const problems: string[] = [];
const contexts: BrowserContext[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

async function openDevice(width: number, height: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
  contexts.push(context);
  const page = await context.newPage();
  watchProblems(page, problems);
  await page.goto(server.url);
  await page.locator('.conn[data-state="open"]').waitFor({ timeout: 15_000 });
  await page.locator(".conv-header h1", { hasText: "General" }).waitFor({ timeout: 15_000 });
  return page;
}

beforeAll(async () => {
  if (missingChromium) return;
  mkdirSync(resultsDir, { recursive: true });
  const temp = await tempDir();
  cleanup = temp.cleanup;
  server = await startExample(temp.dir);
  browser = await launchChromium();
  agent = recordingClient({ url: wsUrl(server), deviceId: "script" }).client;
  await agent.connect();
}, 60_000);

afterAll(async () => {
  agent?.close();
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

const badge = (page: Page, chatId: string) =>
  page.locator(`.sidebar .channel[data-chat-id="${chatId}"] .badge:not(.ask-badge)`);
const badgeText = async (page: Page, chatId: string) =>
  (await badge(page, chatId).count()) ? (await badge(page, chatId).textContent())?.replace(/\D+/g, "") : "none";

/** Makes the page's tab look hidden (or visible again) to the page, and tells it. */
async function setHidden(page: Page, hidden: boolean): Promise<void> {
  await page.evaluate((h) => {
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (h ? "hidden" : "visible") });
    document.dispatchEvent(new Event("visibilitychange"));
  }, hidden);
}

describe.sequential("web UI - unread badges that follow reads on every device", { timeout: 60_000 }, () => {
  it("an answer in a channel on no screen shows a badge on both devices; showing it on one, visible, clears it on both", async () => {
    const laptop = await openDevice(1280, 860);
    const phone = await openDevice(1280, 860);
    const work = await agent.request("channel.create", { name: "Work", kind: "channel" });
    await poll(() => badgeText(laptop, work.chat_id)).toBe("none");
    await agent.sendMessage({ chat_id: work.chat_id, text: "report in" });
    await poll(() => badgeText(laptop, work.chat_id)).toBe("1");
    await poll(() => badgeText(phone, work.chat_id)).toBe("1");
    await laptop.screenshot({ path: path.join(resultsDir, "read-state-badges.png") });

    // A hidden tab that has the channel open marks nothing: the other device keeps its badge.
    await setHidden(phone, true);
    await phone.locator(`.sidebar .channel[data-chat-id="${work.chat_id}"]`).click();
    await phone.locator("article.msg.assistant", { hasText: "report in" }).waitFor({ timeout: 15_000 });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await badgeText(laptop, work.chat_id)).toBe("1");

    // Visible again: what is on screen is read, and the badge clears on both devices.
    await setHidden(phone, false);
    await poll(() => badgeText(laptop, work.chat_id)).toBe("none");
    await poll(() => badgeText(phone, work.chat_id)).toBe("none");
    await laptop.screenshot({ path: path.join(resultsDir, "read-state-cleared.png") });
    expect(problems).toEqual([]);
  });
});
