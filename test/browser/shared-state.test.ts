// The web UI driven by the gateway's shared conversation state (docs/PROTOCOL.md §14), in Chromium
// against the example server and its demo runtime slowed down so turns stay running: Stop sends
// `turn.stop` (no message), commands read as one small line, a tab that joins mid-turn shows the
// card, the running tool and the Stop button, tool rows come back from history, and the queue is
// the gateway's on every device with Cancel and Send now. Separate browser contexts are devices.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
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
const contexts: BrowserContext[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

async function openDevice(width: number, height: number): Promise<Page> {
  return visit(await newDevice(width, height));
}

/** A device's tab, not on the page yet: opening it later costs only the page load. */
async function newDevice(width: number, height: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
  contexts.push(context);
  const page = await context.newPage();
  watchProblems(page, problems);
  return page;
}

async function visit(page: Page): Promise<Page> {
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
  // Slow turns: a tool runs 4 s and the answer streams 60 characters every 4 s.
  process.env.GATEWAY_DEMO_DELAY_MS = "4000";
  process.env.GATEWAY_DEMO_CHUNK_CHARS = "60";
  server = await startExample(temp.dir);
  browser = await launchChromium();
  laptop = await openDevice(1280, 860);
  phone = await openDevice(390, 800);
}, 60_000);

afterAll(async () => {
  delete process.env.GATEWAY_DEMO_CHUNK_CHARS;
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("textbox", { name: "Message" }).press("Enter");
}

const long = (word: string) => `${word} ${"and so on ".repeat(20)}`.trim();
const stopButton = (page: Page) => page.locator("button.stop");
const userBubbles = (page: Page) => page.locator("article.msg.user").allTextContents();
const lastAnswer = (page: Page) => page.locator("article.msg.assistant").last();

describe.sequential("web UI - the gateway's shared state", { timeout: 60_000 }, () => {
  it("Stop sends turn.stop: the answer stops on every device and no /stop message appears", async () => {
    await send(laptop, long("first"));
    await poll(() => lastAnswer(laptop).locator(".body").textContent()).toContain("You said: first");
    await stopButton(phone).waitFor();
    const before = await userBubbles(laptop);
    await stopButton(laptop).click();
    await poll(() => lastAnswer(laptop).getAttribute("class")).toContain("status-stopped");
    await poll(() => lastAnswer(phone).getAttribute("class")).toContain("status-stopped");
    await poll(() => stopButton(laptop).isHidden()).toBe(true);
    await poll(() => stopButton(phone).isHidden()).toBe(true);
    expect(await userBubbles(laptop)).toEqual(before);
    expect(await laptop.locator(".command-line").count()).toBe(0);
    await laptop.screenshot({ path: path.join(resultsDir, "shared-stopped.png") });
  });

  it("a typed gateway command shows as one small line, not a bubble, on every device and after a reload", async () => {
    const before = (await userBubbles(laptop)).length;
    await send(laptop, "/stop");
    for (const page of [laptop, phone])
      await poll(() => page.locator(".command-line .command-what").last().textContent()).toBe("Stopped");
    expect((await userBubbles(laptop)).length).toBe(before);
    await phone.reload();
    await phone.locator(".command-line").last().waitFor();
    expect(await phone.locator(".command-line .command-what").last().textContent()).toBe("Stopped");
    expect((await userBubbles(phone)).some((t) => t.includes("/stop"))).toBe(false);
  });

  it("a tab that joins mid-turn shows the open card and Stop, then the running tool", async () => {
    await send(laptop, "approve: join me");
    await laptop.locator(".ask-approval").waitFor();
    const tablet = await openDevice(820, 900);
    await tablet.locator(".ask-approval").waitFor();
    await stopButton(tablet).waitFor();
    await tablet.screenshot({ path: path.join(resultsDir, "shared-join-card.png") });
    // The browser side of the next tab is made first: the tool runs only 4 s, on a loaded machine too.
    const late = await newDevice(1024, 800);
    await laptop.locator(".ask-approval").getByRole("button", { name: "Approve" }).click();
    // A tab opened while the tool runs sees it running, in the answer, with Stop.
    await visit(late);
    const tool = late.locator("article.msg.assistant .tool.running");
    await tool.waitFor({ timeout: 5000 });
    expect(await tool.locator(".tool-name").textContent()).toBe("echo");
    expect(await stopButton(late).isVisible()).toBe(true);
    await late.screenshot({ path: path.join(resultsDir, "shared-join-tool.png") });
    await poll(() => lastAnswer(late).locator(".body").textContent()).toContain("You said: join me");
    await poll(() => stopButton(late).isHidden()).toBe(true);
    await tablet.context().close();
    await late.context().close();
  });

  it("a tab that joins after a tool finished shows it finished, with its output, in the running answer", async () => {
    await poll(() => stopButton(laptop).isHidden()).toBe(true);
    await send(laptop, `tool: ${long("finished")}`);
    await laptop.locator("article.msg.assistant.streaming .tool.ok").waitFor({ timeout: 15_000 });
    const late = await openDevice(1024, 800);
    // From the join snapshot alone (docs/PROTOCOL.md §14.3): the tool's start and its end.
    const row = late.locator("article.msg.assistant.streaming .tool.ok");
    await row.waitFor({ timeout: 5000 });
    expect(await late.locator("article.msg.assistant.streaming .tool").count()).toBe(1);
    expect(await row.locator(".tool-name").textContent()).toBe("echo");
    await row.locator("summary").click();
    expect(await row.locator("pre.tool-output").textContent()).toBe(long("finished"));
    expect(await stopButton(late).isVisible()).toBe(true);
    await late.screenshot({ path: path.join(resultsDir, "shared-join-finished-tool.png") });
    await stopButton(late).click();
    await poll(() => lastAnswer(laptop).getAttribute("class")).toContain("status-stopped");
    await late.context().close();
  });

  it("tool rows come from history after a reload: the name once, arguments and output as text, long ones collapsed", async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line "${i}"`).join("\n");
    await poll(() => stopButton(laptop).isHidden()).toBe(true);
    await send(laptop, `tool: ${lines}`);
    await laptop.locator("article.msg.assistant.streaming .tool.ok").waitFor({ timeout: 15_000 });
    await stopButton(laptop).click();
    await poll(() => lastAnswer(laptop).getAttribute("class")).toContain("status-stopped");
    await phone.reload();
    const row = lastAnswer(phone).locator(".tool.ok");
    await row.waitFor();
    await row.locator("summary").click();
    expect(await row.locator(".tool-name").count()).toBe(1);
    expect(await row.locator(".tool-preview").textContent()).not.toMatch(/^echo /);
    const output = (await row.locator("pre.tool-output").textContent()) ?? "";
    expect(output).toBe(lines);
    expect(await row.locator("pre.tool-args").textContent()).toBe(`text: ${lines.replace(/\n/g, "\n  ")}`);
    expect(await row.locator("pre.tool-output").getAttribute("class")).toContain("collapsed");
    await row.screenshot({ path: path.join(resultsDir, "shared-tool-history.png") });
    await row.locator("button.tool-more").last().click();
    expect(await row.locator("pre.tool-output").getAttribute("class")).not.toContain("collapsed");
  });

  it("messages sent while an answer runs wait in the gateway's queue on every device, with Cancel and Send now", async () => {
    await send(laptop, long("busy"));
    await stopButton(laptop).waitFor();
    await send(laptop, "second");
    await send(laptop, "third");
    for (const page of [laptop, phone]) {
      await poll(() => page.locator("article.msg.user.queued .body").allInnerTexts()).toEqual(["second", "third"]);
    }
    await phone.screenshot({ path: path.join(resultsDir, "shared-queue-phone.png") });
    await laptop.screenshot({ path: path.join(resultsDir, "shared-queue-laptop.png") });
    await phone.getByRole("button", { name: "Cancel queued message: second" }).click();
    for (const page of [laptop, phone])
      await poll(() => page.locator("article.msg.user.queued .body").allInnerTexts()).toEqual(["third"]);
    await poll(() => laptop.locator("article.msg.user .body").allTextContents()).not.toContain("second");
    await phone.getByRole("button", { name: "Send now, stopping the answer: third" }).click();
    await poll(() => laptop.locator("article.msg.assistant.status-stopped .body").last().textContent()).toContain(
      "You said: busy",
    );
    await poll(() => lastAnswer(laptop).locator(".body").textContent()).toContain("You said: third");
    expect(await laptop.locator("article.msg.user.queued").count()).toBe(0);
    await poll(() => phone.locator("article.msg.user.queued").count()).toBe(0);
  });

  it("had no script errors, CSP refusals or dialogs", () => {
    expect(problems).toEqual([]);
  });
});
