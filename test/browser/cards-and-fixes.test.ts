// The web UI's cards in the conversation and what a new user noticed, in Chromium against the
// example server and its demo runtime: the card sits in the message column after its answer and
// leaves a line naming who answered; search snippets read as plain text with the match marked and
// the panel closes when the box is cleared; Settings is styled in dark mode; the phone drawer has
// a backdrop and closes on a new channel; message actions show on hover and focus (always on touch); a tiny context reads
// "<1%". Separate browser contexts are separate devices of the same (anonymous) owner.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { launchChromium, missingChromium, poll, resultsDir, watchProblems } from "./browser.js";

let server: RunningServer;
let cleanup: () => Promise<void>;
let browser: Browser;
let laptop: Page;
let phone: Page;
const problems: string[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

async function openDevice(options: Parameters<Browser["newContext"]>[0]): Promise<Page> {
  const context = await browser.newContext(options);
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
  delete process.env.GATEWAY_DEMO_CHUNK_CHARS;
  server = await startExample(temp.dir);
  browser = await launchChromium();
  laptop = await openDevice({ viewport: { width: 1280, height: 860 } });
  phone = await openDevice({ viewport: { width: 390, height: 800 }, hasTouch: true, isMobile: true });
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

describe.sequential("web UI - cards in the conversation and small fixes", { timeout: 40_000 }, () => {
  it("the card sits in the message column after its answer, and its answer leaves a line naming the device", async () => {
    await send(laptop, "approve: tidy up");
    const card = laptop.locator(".messages .asks .ask-approval");
    await card.waitFor();
    // Right after the answer it belongs to, inside the scrolling log.
    expect(
      await laptop
        .locator(".messages .asks")
        .evaluate((el) => el.previousElementSibling?.matches("article.msg.assistant.streaming")),
    ).toBe(true);
    await laptop.screenshot({ path: path.join(resultsDir, "card-in-column.png") });
    await phone.locator(".messages .asks .ask-approval").getByRole("button", { name: "Approve" }).click();
    await poll(() => lastAnswerText(laptop)).toBe("You said: tidy up");
    // The line names the answering device as it named itself (docs/PROTOCOL.md §14.5).
    await poll(() => laptop.locator(".answered-line").last().textContent()).toMatch(/^Approved by Web \(.*\) · /);
    await poll(() => phone.locator(".answered-line").last().textContent()).toMatch(
      /^Approved by Web \(.*\) \(this device\) · /,
    );
    const pickerId = await laptop.locator(".answered-line").last().getAttribute("data-picker-id");
    // Drawn live and again from the final answer's asks: still one line, under the answer that asked.
    await laptop.waitForTimeout(300);
    for (const page of [laptop, phone])
      expect(await page.locator(`.answered-line[data-picker-id="${pickerId}"]`).count()).toBe(1);
    expect(
      await laptop
        .locator(`.answered-line[data-picker-id="${pickerId}"]`)
        .evaluate((el) => el.closest("article.msg.assistant") !== null),
    ).toBe(true);
    await laptop.screenshot({ path: path.join(resultsDir, "card-answered-line.png") });
    // A device that never saw the card, and the laptop after a reload, draw it from history.
    const fresh = await openDevice({ viewport: { width: 1280, height: 860 } });
    await poll(() => fresh.locator(`.answered-line[data-picker-id="${pickerId}"]`).count()).toBe(1);
    expect(await fresh.locator(`.answered-line[data-picker-id="${pickerId}"]`).textContent()).toMatch(
      /^Approved by Web \(.*\) · /,
    );
    await fresh.screenshot({ path: path.join(resultsDir, "card-answered-line-fresh-device.png") });
    await fresh.context().close();
    await laptop.reload();
    await laptop.locator('.conn[data-state="open"]').waitFor({ timeout: 15_000 });
    await poll(() => laptop.locator(`.answered-line[data-picker-id="${pickerId}"]`).count()).toBe(1);
  });

  it("search snippets show plain text with the match marked, and clearing the box closes the results", async () => {
    await send(laptop, "The **albatross** glides over `the ocean` for [hours](https://example.com)");
    await poll(() => lastAnswerText(laptop)).toContain("albatross");
    const box = laptop.getByRole("searchbox", { name: "Search messages" });
    await box.fill("albatross");
    await box.press("Enter");
    const snippet = laptop.locator("button.hit .hit-snippet").first();
    await snippet.waitFor();
    const text = (await snippet.textContent()) ?? "";
    expect(text).toContain("albatross glides over the ocean for hours");
    expect(text).not.toMatch(/[*`[\]]|https:/);
    expect(await snippet.locator("mark").first().textContent()).toBe("albatross");
    await laptop.screenshot({ path: path.join(resultsDir, "search-plain.png") });
    const panel = laptop.getByRole("complementary", { name: "Search results" });
    expect(await panel.isVisible()).toBe(true);
    await box.fill("");
    await poll(() => panel.isVisible()).toBe(false);
  });

  it("a tiny context share reads <1%, not 0%", async () => {
    const footer = laptop.locator('.msg.assistant:not(.streaming) .runtime-footer [data-field="context_pct"]').last();
    expect(await footer.textContent()).toBe("<1% context");
  });

  it("message actions show on hover and keyboard focus with a mouse, and always on touch", async () => {
    const answer = laptop.locator(".msg.assistant:not(.streaming)").last();
    const actions = answer.locator(".msg-actions");
    await laptop.mouse.move(5, 5);
    await poll(() => actions.evaluate((el) => getComputedStyle(el).opacity)).toBe("0");
    await answer.hover();
    await poll(() => actions.evaluate((el) => getComputedStyle(el).opacity)).toBe("1");
    await laptop.mouse.move(5, 5);
    await answer.getByRole("button", { name: "Copy message text" }).focus();
    await poll(() => actions.evaluate((el) => getComputedStyle(el).opacity)).toBe("1");
    const onPhone = phone.locator(".msg.assistant:not(.streaming) .msg-actions").last();
    expect(await onPhone.evaluate((el) => getComputedStyle(el).opacity)).toBe("1");
  });

  it("the phone drawer dims the conversation behind it, and a tap there closes it", async () => {
    await phone.getByRole("button", { name: "Show channels" }).click();
    const backdrop = () =>
      phone.locator(".conversation").evaluate((el) => getComputedStyle(el, "::before").backgroundColor);
    await poll(backdrop).toMatch(/^rgba\(20, 25, 40, 0\.45\)$/);
    await phone.screenshot({ path: path.join(resultsDir, "drawer-backdrop.png") });
    await phone.mouse.click(370, 400);
    await poll(() => phone.evaluate(() => document.body.classList.contains("show-sidebar"))).toBe(false);
  });

  it("on a phone, a channel made with + New in the drawer opens with the drawer closed, ready to type in", async () => {
    await phone.getByRole("button", { name: "Show channels" }).click();
    await phone.getByRole("button", { name: "+ New" }).click();
    const dialog = phone.locator("dialog[open]");
    await dialog.getByRole("textbox", { name: "Name" }).fill("Groceries");
    await dialog.getByRole("button", { name: "Create" }).click();
    await poll(() => phone.locator(".conv-header h1").textContent()).toBe("Groceries");
    await poll(() => phone.evaluate(() => document.body.classList.contains("show-sidebar"))).toBe(false);
    // Slid off the screen, not only unmarked: nothing covers the new chat.
    await poll(() => phone.locator(".sidebar").evaluate((el) => el.getBoundingClientRect().right)).toBeLessThanOrEqual(
      0,
    );
    await phone.getByRole("textbox", { name: "Message" }).click({ trial: true, timeout: 2000 });
    await phone.screenshot({ path: path.join(resultsDir, "phone-new-channel.png") });
  });

  it("Settings in dark mode uses the dark theme's colours for the dialog and its controls", async () => {
    const dark = await openDevice({ viewport: { width: 1024, height: 800 }, colorScheme: "dark" });
    await dark.getByRole("button", { name: "Settings" }).click();
    const dialog = dark.locator("dialog[open]");
    await dialog.waitFor();
    const colours = await dialog.evaluate((el) => {
      const select = el.querySelector("select")!;
      return {
        dialog: getComputedStyle(el).backgroundColor,
        select: getComputedStyle(select).backgroundColor,
        text: getComputedStyle(select).color,
      };
    });
    expect(colours.dialog).not.toBe("rgb(255, 255, 255)");
    expect(colours.select).toBe("rgb(34, 39, 49)");
    expect(colours.text).not.toBe("rgb(0, 0, 0)");
    await dialog.screenshot({ path: path.join(resultsDir, "settings-dark.png") });
    await dark.context().close();
  });

  it("a message sent with Enter while the page still connects goes out once the lane opens, not left in the box", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    // A slow network: the page's frames reach the gateway a second and a half late, so the first
    // lane opens well after the composer shows.
    await context.routeWebSocket(/\/ws\/gateway/, (ws) => {
      const gateway = ws.connectToServer();
      ws.onMessage((message) => setTimeout(() => gateway.send(message), 1500));
    });
    const early = await context.newPage();
    watchProblems(early, problems);
    await early.goto(server.url);
    await send(early, "typed before it connected");
    expect(await early.locator('.conn[data-state="open"]').count()).toBe(0);
    await early.locator(".msg.user", { hasText: "typed before it connected" }).waitFor();
    expect(await early.getByRole("textbox", { name: "Message" }).inputValue()).toBe("");
    await context.close();
  });

  it("had no script errors, CSP refusals or dialogs", () => {
    expect(problems).toEqual([]);
  });
});
