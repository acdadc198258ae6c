// The web UI on a phone that comes and goes (docs/PROTOCOL.md §21), in Chromium on a phone-sized
// viewport. The page reaches the example server through a relay that can go silent
// (test/fixtures/pausable-link.ts): a server that stops answering without closing anything, as a
// phone's lost network looks from the page. The browser's own offline switch is the other cut.
// Screenshots go to test-results/ (phone-*.png).
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createUserStore } from "chat-gateway/login";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { pausableLink, type PausableLink } from "../fixtures/pausable-link.js";
import { HASHES } from "../http/helpers.js";
import { buildWebUi, launchChromium, missingChromium, poll, resultsDir, watchProblems } from "./browser.js";

let server: RunningServer;
let link: PausableLink;
let browser: Browser;
let phone: BrowserContext;
let page: Page;
let cleanup: (() => Promise<void>) | undefined;
const problems: string[] = [];
/** `message.send` frames the page sent: text and `client_msg_id`. */
const sends: Array<{ text: string; client_msg_id: string }> = [];

/** The product bound of §21 for "Offline" to show (ms); checked with room for a loaded machine. */
const OFFLINE_BOUND_MS = 3_000;
const OFFLINE_DEADLINE_MS = OFFLINE_BOUND_MS + 5_000;

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  if (missingChromium) return;
  buildWebUi();
  const temp = await tempDir();
  cleanup = temp.cleanup;
  await createUserStore(path.join(temp.dir, "users.json")).add("alice", HASHES["alice-password"]);
  process.env.GATEWAY_DEMO_DELAY_MS = "20";
  server = await startExample(temp.dir);
  link = await pausableLink({ host: "127.0.0.1", port: server.port });
  browser = await launchChromium();
  phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  // Every text of the connection indicator, with when it showed (ms on the page's clock).
  await phone.addInitScript(() => {
    const seen: Array<[string, number]> = [];
    (window as unknown as { __conn: typeof seen }).__conn = seen;
    new MutationObserver(() => {
      const text = document.querySelector(".conn")?.textContent ?? "";
      if (text && seen.at(-1)?.[0] !== text) seen.push([text, performance.now()]);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  page = await phone.newPage();
  watchProblems(page, problems);
  page.on("websocket", (socket) =>
    socket.on("framesent", (frame) => {
      if (typeof frame.payload !== "string") return;
      const sent = JSON.parse(frame.payload) as { type: string; payload: { text: string; client_msg_id: string } };
      if (sent.type === "message.send") sends.push(sent.payload);
    }),
  );
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await link?.close();
  await server?.close();
  await cleanup?.();
});

const conn = () => page.locator(".conn");
const pending = () => page.locator(".send-queue .pending");
const userMessages = (text: string) => page.locator(".msg.user .body", { hasText: text });

async function send(text: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("textbox", { name: "Message" }).press("Enter");
}

/** Milliseconds from `since` (page clock) until the indicator first said "Offline", or undefined. */
async function offlineAfter(since: number): Promise<number | undefined> {
  const seen = await page.evaluate(() => (window as unknown as { __conn: Array<[string, number]> }).__conn);
  const first = seen.find(([text, at]) => at >= since && text.startsWith("Offline"));
  return first && Math.round(first[1] - since);
}

const now = () => page.evaluate(() => performance.now());

/** The message is in the log once, and every `message.send` of it carried the same `client_msg_id`. */
async function storedOnce(text: string): Promise<void> {
  await expect.poll(() => userMessages(text).count(), { timeout: 20_000 }).toBe(1);
  await poll(() => pending().count()).toBe(0);
  const ids = new Set(sends.filter((s) => s.text === text).map((s) => s.client_msg_id));
  expect(ids.size).toBe(1);
  // Once on the gateway too, as a reload reads it back.
  await page.reload();
  await conn().and(page.locator('[data-state="open"]')).waitFor({ timeout: 20_000 });
  await expect.poll(() => userMessages(text).count(), { timeout: 15_000 }).toBe(1);
}

describe.sequential("the web UI on a phone that comes and goes", { timeout: 90_000 }, () => {
  it("signs in on a phone-sized screen", async () => {
    await page.goto(link.url);
    await page.locator("#signin-user").fill("alice");
    await page.locator("#signin-password").fill("alice-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    await page.screenshot({ path: path.join(resultsDir, "phone-connected.png") });
  });

  it("the browser goes offline: Offline shows at once, a message shows as waiting and is sent once when the network is back", async () => {
    const since = await now();
    await phone.setOffline(true);
    await expect.poll(() => conn().textContent(), { timeout: OFFLINE_DEADLINE_MS }).toMatch(/^Offline/);
    const took = await offlineAfter(since);
    console.log(`offline event: "Offline" showed after ${took} ms (bound ${OFFLINE_BOUND_MS} ms)`);
    expect(took).toBeLessThan(OFFLINE_DEADLINE_MS);
    expect(await conn().textContent()).toBe("Offline: waiting for the network…");

    await send("written on the train");
    await poll(() => pending().count()).toBe(1);
    expect(await pending().locator(".pending-state").textContent()).toBe("Waiting for connection");
    expect(await pending().locator(".pending-text").textContent()).toBe("written on the train");
    await page.screenshot({ path: path.join(resultsDir, "phone-offline-waiting.png") });

    await phone.setOffline(false);
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    await storedOnce("written on the train");
  });

  it("the server stops answering: two missed pings show Offline, a message sent into the silence shows at once and is sent once when it answers again", async () => {
    const since = await now();
    link.pause();
    // Sent before anything noticed: the socket still looks open.
    await send("into the silence");
    await poll(() => pending().count()).toBe(1);
    await expect.poll(() => conn().textContent(), { timeout: OFFLINE_DEADLINE_MS }).toMatch(/^Offline: reconnecting/);
    const took = await offlineAfter(since);
    console.log(`silent server: "Offline" showed after ${took} ms (bound ${OFFLINE_BOUND_MS} ms)`);
    expect(took).toBeLessThan(OFFLINE_DEADLINE_MS);
    await poll(() => pending().locator(".pending-state").textContent()).toBe("Waiting for connection");
    expect(await pending().isVisible()).toBe(true);
    await page.screenshot({ path: path.join(resultsDir, "phone-silent-server.png") });

    link.resume();
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    await storedOnce("into the silence");
  });

  it("the network or the app coming back starts the backoff over", async () => {
    // Every attempt refused: the waits grow (0.5, 1, 2, 4 s, less jitter).
    link.pause("reset");
    const waitOf = async () => Number(/in (\d+) s/.exec((await conn().textContent()) ?? "")?.[1] ?? 0);
    await expect.poll(waitOf, { timeout: 60_000 }).toBeGreaterThanOrEqual(4);
    // Back: the next attempt goes at once and, refused again, waits the first delay, not a longer one.
    await page.evaluate(() => window.dispatchEvent(new Event("online")));
    await poll(waitOf).toBe(1);
    await expect.poll(waitOf, { timeout: 60_000 }).toBeGreaterThanOrEqual(4);
    await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
    await poll(waitOf).toBe(1);
    link.resume();
    await page.evaluate(() => window.dispatchEvent(new Event("pageshow")));
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
  });

  it("an app opened offline from the cached shell starts by itself when the network is back", async () => {
    await poll(() => page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
    await phone.setOffline(true);
    await page.reload();
    await page.getByText("The server cannot be reached").waitFor({ timeout: 15_000 });
    expect(await page.locator(".signin-notice").textContent()).toBe("Trying again when the network is back…");
    await page.screenshot({ path: path.join(resultsDir, "phone-opened-offline.png") });
    await phone.setOffline(false);
    // No reload: the page tries again on its own.
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    expect(await page.getByText("The server cannot be reached").count()).toBe(0);
  });

  it("saw no page errors and no CSP violations", () => {
    expect(problems).toEqual([]);
  });
});
