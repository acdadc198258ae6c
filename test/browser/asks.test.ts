// The agent's asks in the web UI (docs/PROTOCOL.md §11), in Chromium against the example server
// and its demo runtime (`approve: X`, `ask: Q`, `model:`): the approval, question and model cards,
// a card closed by another device's answer or by /stop, the channel badge, and slash completions.
// Two browser contexts are two devices of the same (anonymous) owner.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { axeViolations, launchChromium, missingChromium, poll, watchProblems } from "./browser.js";

const root = path.resolve(import.meta.dirname, "../..");
const resultsDir = path.join(root, "test-results");

let server: RunningServer;
let cleanup: () => Promise<void>;
let browser: Browser;
let laptop: Page;
let phone: Page;
const problems: string[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

async function openDevice(width: number, height: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
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
  process.env.GATEWAY_DEMO_DELAY_MS = "5";
  server = await startExample(temp.dir);
  browser = await launchChromium();
  laptop = await openDevice(1280, 860);
  phone = await openDevice(390, 800);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("textbox", { name: "Message" }).press("Enter");
}

const lastAnswerText = async (page: Page) =>
  ((await page.locator(".msg.assistant:not(.streaming) .body").last().textContent()) ?? "").trim();

describe.sequential("web UI - asks", { timeout: 40_000 }, () => {
  it("shows an approval card with the tool, its full arguments, the time left, and labelled buttons", async () => {
    await send(laptop, "approve: clean the build folder");
    const card = laptop.locator(".ask-approval");
    await card.waitFor();
    expect(await card.locator(".tool-name").textContent()).toBe("echo");
    expect(JSON.parse((await card.locator(".tool-args").textContent()) ?? "")).toEqual({
      text: "clean the build folder",
    });
    expect(await card.locator(".ask-expires").textContent()).toMatch(/Time left: (9:[0-5]\d|10:00)/);
    expect(await card.getByRole("button", { name: "Approve" }).isVisible()).toBe(true);
    expect(await card.getByRole("button", { name: "Deny" }).isVisible()).toBe(true);
    // The arguments fold away and back.
    await card.locator(".ask-tool summary").click();
    expect(await card.locator(".tool-args").isVisible()).toBe(false);
    await card.locator(".ask-tool summary").click();
    // The channel waits for an answer: its sidebar entry says so.
    expect(await laptop.locator('button.channel[data-chat-id="default"] .ask-badge').textContent()).toContain(
      "waiting for your answer",
    );
    expect(await axeViolations(laptop)).toEqual([]);
    await card.screenshot({ path: path.join(resultsDir, "ask-approval.png") });
    await laptop.screenshot({ path: path.join(resultsDir, "ask-approval-page.png") });

    // Keyboard: Tab reaches Approve, Enter answers.
    await card.getByRole("button", { name: "Deny" }).focus();
    await laptop.keyboard.press("Shift+Tab");
    expect(await laptop.evaluate(() => document.activeElement?.textContent)).toBe("Approve");
    await laptop.keyboard.press("Enter");
    await poll(() => card.count()).toBe(0);
    await poll(() => lastAnswerText(laptop)).toBe("You said: clean the build folder");
    expect(await laptop.locator(".ask-badge").count()).toBe(0);
    // Focus went back to the composer, not to the page's start.
    expect(await laptop.evaluate(() => document.activeElement?.className)).toContain("composer-input");
  });

  it("a card answered on another device closes at once on this one", async () => {
    await send(laptop, "approve: deploy");
    await laptop.locator(".ask-approval").waitFor();
    const onPhone = phone.locator(".ask-approval");
    await onPhone.waitFor();
    await phone.screenshot({ path: path.join(resultsDir, "ask-approval-phone.png") });
    expect(await axeViolations(phone)).toEqual([]);
    await onPhone.getByRole("button", { name: "Deny" }).click();
    await poll(() => laptop.locator(".ask-approval").count()).toBe(0);
    await poll(() => lastAnswerText(laptop)).toBe("Denied.");
  });

  it("/stop closes an open card", async () => {
    await send(laptop, "approve: something slow");
    await laptop.locator(".ask-approval").waitFor();
    await send(laptop, "/stop");
    await poll(() => laptop.locator(".ask-approval").count()).toBe(0);
    await poll(() => phone.locator(".ask-approval").count()).toBe(0);
  });

  it("shows a question card with its options and a text field, and answers in words", async () => {
    await send(laptop, "ask: tea or coffee?");
    const card = laptop.locator(".ask-confirm");
    await card.waitFor();
    expect(await card.locator(".ask-title, .ask-body").allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining("tea or coffee?")]),
    );
    expect(await card.getByRole("button", { name: /yes/i }).isVisible()).toBe(true);
    expect(await card.getByRole("button", { name: /no/i }).isVisible()).toBe(true);
    const field = card.getByRole("textbox", { name: /Your answer/ });
    expect(await axeViolations(laptop)).toEqual([]);
    await card.screenshot({ path: path.join(resultsDir, "ask-question.png") });
    await field.fill("green tea");
    await field.press("Enter");
    await poll(() => card.count()).toBe(0);
    await poll(() => lastAnswerText(laptop)).toBe("You answered: green tea");
  });

  it("shows a model picker and the lane's answers use the chosen model", async () => {
    await send(laptop, "model:");
    const card = laptop.locator(".ask-model");
    await card.waitFor();
    expect(await card.getByRole("group", { name: "Choose a model" }).getByRole("button").allTextContents()).toEqual([
      "Demo (current)",
      "Demo (fast)",
    ]);
    expect(await axeViolations(laptop)).toEqual([]);
    await card.screenshot({ path: path.join(resultsDir, "ask-model.png") });
    await card.locator('[data-option-id="demo-fast"]').click();
    await poll(() => lastAnswerText(laptop)).toBe("Model: demo-fast");
  });

  it("completes a slash command's argument from the gateway in the composer", async () => {
    const box = laptop.getByRole("textbox", { name: "Message" });
    await box.fill("/model demo-f");
    const option = laptop.getByRole("option", { name: /\/model demo-fast/ });
    await option.waitFor({ timeout: 5000 });
    await laptop.screenshot({ path: path.join(resultsDir, "ask-completions.png") });
    await box.press("Tab");
    expect(await box.inputValue()).toBe("/model demo-fast");
    await box.fill("");
  });

  it("had no script errors, CSP refusals or dialogs", () => {
    expect(problems).toEqual([]);
  });
});
