// The web UI's answer controls in a real browser against the example server (login off): Stop,
// highlighted code blocks with copy and keyboard scrolling, dark mode, the running tool, the token
// footer, marked search results, copy/regenerate/edit, and the queue of messages sent while an
// answer streams. Ends with axe on desktop and 375 px in light and dark, and a screenshot set.
import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { axeViolations, launchChromium, missingChromium, poll, resultsDir, watchProblems } from "./browser.js";

let server: RunningServer;
let dataDir: string;
let cleanup: () => Promise<void>;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const problems: string[] = [];

const input = () => page.getByRole("textbox", { name: "Message" });

async function send(text: string): Promise<void> {
  await input().fill(text);
  await input().press("Enter");
}

/** The last answer, once it is finished (its actions are shown). */
async function lastAnswer() {
  const answer = page.locator(".msg.assistant").last();
  await answer.locator(".msg-actions").waitFor();
  return answer;
}

/** Send a text and wait for the new answer to it to finish. */
async function ask(text: string) {
  const answers = page.locator(".msg.assistant");
  const before = await answers.count();
  await send(text);
  await poll(() => answers.count()).toBeGreaterThan(before);
  return lastAnswer();
}

const clipboard = () => page.evaluate(() => navigator.clipboard.readText());

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  if (missingChromium) return;
  const temp = await tempDir();
  cleanup = temp.cleanup;
  dataDir = temp.dir;
  // Slow enough to watch an answer stream, stop it and queue behind it.
  process.env.GATEWAY_DEMO_DELAY_MS = "30";
  server = await startExample(temp.dir);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: "light" });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
  // Record every running-tool label shown (a demo tool runs for only a few tens of milliseconds).
  await context.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __running: string[] }).__running = seen;
    new MutationObserver(() => {
      const row = document.querySelector(".tool.running summary");
      const text = row?.querySelector(".spinner") ? (row.textContent ?? "") : "";
      if (text && seen.at(-1) !== text) seen.push(text);
    }).observe(document, { subtree: true, childList: true });
  });
  page = await context.newPage();
  watchProblems(page, problems);
  await page.goto(server.url);
  await page.locator('.conn[data-state="open"]').waitFor({ timeout: 15_000 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

describe.sequential("web UI answer controls", { timeout: 40_000 }, () => {
  it("stops a streaming answer with the Stop button", async () => {
    const stop = page.getByRole("button", { name: "Stop" });
    expect(await stop.isVisible()).toBe(false);
    await send(`Tell me a long story ${"about the sea ".repeat(150)}`);
    await page.locator(".msg.assistant.streaming .body").waitFor();
    await stop.click();
    const stopped = page.locator(".msg.assistant.status-stopped").last();
    await stopped.waitFor();
    expect(((await stopped.locator(".body").textContent()) ?? "").length).toBeLessThan(1500);
    await poll(() => stop.isVisible()).toBe(false);
  });

  it("renders an echoed code fence as a highlighted block with its language, a copy button and keyboard scrolling", async () => {
    const code = `const answer: number = 42; // ${"a very long line that needs a sideways scroll ".repeat(6)}\nfunction twice(n: number) { return n * 2; }`;
    const answer = await ask(`Here is some code:\n\`\`\`ts\n${code}\n\`\`\``);
    // The demo echoes the text: the fence must open on its own line and close (no stray backticks).
    expect(await answer.locator(".body > p").first().textContent()).toBe("You said:");
    expect(await answer.locator(".body").textContent()).not.toContain("```");
    const block = answer.locator(".code-block");
    expect(await block.count()).toBe(1);
    expect(await block.locator(".code-lang").textContent()).toBe("ts");
    expect(await block.locator("code").textContent()).toBe(`${code}\n`);
    expect(await block.locator(".hljs-keyword").first().textContent()).toBe("const");
    expect(await block.locator(".hljs-comment").count()).toBe(1);

    await block.getByRole("button", { name: "Copy ts code" }).click();
    await poll(clipboard).toBe(`${code}\n`);
    await poll(() => block.locator(".copy-code").textContent()).toBe("Copied");

    const pre = block.getByRole("region", { name: "ts code" });
    expect(await pre.getAttribute("tabindex")).toBe("0");
    // Tab from the copy button reaches the code itself, with a visible focus ring.
    await block.locator(".copy-code").focus();
    await page.keyboard.press("Tab");
    expect(
      await pre.evaluate((el) => [
        document.activeElement === el,
        el.matches(":focus-visible"),
        getComputedStyle(el).outlineStyle,
      ]),
    ).toEqual([true, true, "solid"]);
    expect(await pre.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
    for (let i = 0; i < 5; i++) await page.keyboard.press("ArrowRight");
    await poll(() => pre.evaluate((el) => el.scrollLeft)).toBeGreaterThan(0);
  });

  it("shows a running tool with a spinner and its name, then its result", async () => {
    await ask("tool: count the stars");
    await page.locator('.tool.ok[data-tool="echo"]').last().waitFor();
    const seen = await page.evaluate(() => (window as unknown as { __running: string[] }).__running);
    expect(seen.some((text) => text.startsWith("Running echo…"))).toBe(true);
  });

  it("puts the model and the token count of an answer in its footer, also after a reload", async () => {
    const tokens = async () => (await lastAnswer()).locator(".runtime-footer [data-field=tokens]").textContent();
    expect(await tokens()).toMatch(/^[1-9][\d,]* tokens$/);
    expect(await (await lastAnswer()).locator(".runtime-footer [data-field=model]").textContent()).toBe("demo");
    const before = await tokens();
    await page.reload();
    await page.locator('.conn[data-state="open"]').waitFor();
    expect(await tokens()).toBe(before);
  });

  it("copies an answer, regenerates it and puts a message of the user's back in the composer", async () => {
    let answer = await ask("What colour is the sky?");
    await answer.getByRole("button", { name: "Copy message text" }).click();
    await poll(clipboard).toBe("You said: What colour is the sky?");

    const users = page.locator(".msg.user .body");
    const before = await users.count();
    const answers = await page.locator(".msg.assistant").count();
    await answer.getByRole("button", { name: "Regenerate this answer" }).click();
    await poll(() => users.count()).toBe(before + 1);
    await poll(() => page.locator(".msg.assistant").count()).toBe(answers + 1);
    expect((await users.last().textContent())?.trim()).toBe("What colour is the sky?");
    answer = await lastAnswer();
    expect((await answer.locator(".body").textContent())?.trim()).toBe("You said: What colour is the sky?");

    await page.locator(".msg.user").last().getByRole("button", { name: "Edit as a new message" }).click();
    expect(await input().inputValue()).toBe("What colour is the sky?");
    expect(await input().evaluate((el) => document.activeElement === el)).toBe(true);
    await input().fill("");
  });

  it("a message sent while an answer streams waits in the gateway's queue, can be cancelled, and runs when the answer ends", async () => {
    const users = page.locator(".msg.user .body");
    await send(`A long question ${"with many words ".repeat(60)}`);
    await page.locator(".msg.assistant.streaming").waitFor();
    await send("never mind this one");
    const queued = page.locator(".msg.user.queued");
    await poll(() => queued.count()).toBe(1);
    expect(await queued.locator(".queued-tag").textContent()).toBe("Queued");
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: path.join(resultsDir, "features-streaming.png") });
    await queued.getByRole("button", { name: /Cancel queued message/ }).click();
    await poll(() => queued.count()).toBe(0);
    expect(await page.locator(".msg.user .body").filter({ hasText: "never mind this one" }).count()).toBe(0);
    await send("and then this");
    await poll(() => queued.count()).toBe(1);
    await poll(async () => (await users.last().textContent())?.trim()).toBe("and then this");
    await poll(() => queued.count()).toBe(0);
    await poll(async () => (await (await lastAnswer()).locator(".body").textContent())?.trim()).toBe(
      "You said: and then this",
    );
  });

  it("holds a message sent while offline and sends it once the connection is back", async () => {
    const port = server.port;
    await server.close();
    await poll(() => page.locator(".conn").getAttribute("data-state")).not.toBe("open");
    await send("sent when we are back");
    const queued = page.locator(".send-queue .pending");
    await poll(() => queued.count()).toBe(1);
    expect(await queued.locator(".pending-state").textContent()).toBe("Waiting for connection");
    server = await startExample(dataDir, port);
    const users = page.locator(".msg.user .body");
    await expect
      .poll(async () => (await users.last().textContent())?.trim(), { timeout: 20_000 })
      .toBe("sent when we are back");
    expect(await queued.count()).toBe(0);
    expect(await users.filter({ hasText: "sent when we are back" }).count()).toBe(1);
    await poll(async () => (await (await lastAnswer()).locator(".body").textContent())?.trim()).toBe(
      "You said: sent when we are back",
    );
  });

  it("marks the match in search results, which wrap instead of running off the panel", async () => {
    await ask(
      `The albatross ${"glides over the southern ocean for hours without flapping ".repeat(3)}Albatrosses-everywhere`,
    );
    const search = page.getByRole("searchbox", { name: "Search messages" });
    await search.fill("albatross");
    await search.press("Enter");
    const hit = page.locator("button.hit").first();
    await hit.waitFor();
    expect((await hit.locator("mark").allTextContents()).map((t) => t.toLowerCase())).toContain("albatross");
    const panel = page.getByRole("complementary", { name: "Search results" });
    expect(await panel.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    expect(
      await hit.evaluate(
        (el) => el.getBoundingClientRect().right <= el.closest("aside")!.getBoundingClientRect().right,
      ),
    ).toBe(true);
    await page.getByRole("button", { name: "Close search results" }).click();
  });

  it("follows the system's dark mode live, and the theme setting overrides it", async () => {
    const theme = () =>
      page.evaluate(() => [
        document.documentElement.dataset.theme,
        getComputedStyle(document.documentElement).backgroundColor,
      ]);
    expect(await theme()).toEqual(["light", "rgb(246, 247, 249)"]);
    await page.emulateMedia({ colorScheme: "dark" });
    await poll(theme).toEqual(["dark", "rgb(20, 23, 28)"]);

    await page.getByRole("button", { name: "Settings" }).click();
    await page.getByRole("combobox", { name: "Theme" }).selectOption("light");
    expect((await theme())[0]).toBe("light");
    await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    await page.reload();
    await page.locator('.conn[data-state="open"]').waitFor();
    expect((await theme())[0]).toBe("light");
    await page.getByRole("button", { name: "Settings" }).click();
    await page.getByRole("combobox", { name: "Theme" }).selectOption("auto");
    await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    expect((await theme())[0]).toBe("dark");
  });

  it("paints a dark system's page dark from the first frame, before the app's script has run", async () => {
    const dark = await browser.newContext({ viewport: { width: 800, height: 600 }, colorScheme: "dark" });
    try {
      const fresh = await dark.newPage();
      // Without app.js the page can only be dark if the theme was set before it.
      await fresh.route("**/app.js", (route) => route.abort());
      await fresh.goto(server.url);
      const painted = await fresh.evaluate(() => [
        document.documentElement.dataset.theme,
        getComputedStyle(document.documentElement).backgroundColor,
      ]);
      expect(painted).toEqual(["dark", "rgb(20, 23, 28)"]);
    } finally {
      await dark.close();
    }
  });

  it("passes the accessibility check on desktop and at 375 px, light and dark, and keeps a screenshot of each", async () => {
    // A tool row and a code block in view, as a user would see them.
    await ask("tool: print it\n```js\nconsole.log('hi');\n```");
    mkdirSync(resultsDir, { recursive: true });
    const shots: Array<{ name: string; width: number; height: number; scheme: "light" | "dark" }> = [
      { name: "features-desktop", width: 1280, height: 860, scheme: "light" },
      { name: "features-dark", width: 1280, height: 860, scheme: "dark" },
      { name: "features-mobile", width: 375, height: 760, scheme: "light" },
      { name: "features-mobile-dark", width: 375, height: 760, scheme: "dark" },
    ];
    const found: Record<string, string[]> = {};
    for (const shot of shots) {
      await page.setViewportSize({ width: shot.width, height: shot.height });
      await page.emulateMedia({ colorScheme: shot.scheme });
      await poll(() => page.evaluate(() => document.documentElement.dataset.theme)).toBe(shot.scheme);
      // On a small screen the sidebar slides away: wait until it is out of the picture.
      if (shot.width < 900)
        await poll(() => page.locator(".sidebar").evaluate((el) => el.getBoundingClientRect().right <= 0)).toBe(true);
      await page.locator(".messages").evaluate((el) => (el.scrollTop = el.scrollHeight));
      await page.screenshot({ path: path.join(resultsDir, `${shot.name}.png`) });
      found[shot.name] = await axeViolations(page);
    }
    expect(found).toEqual(Object.fromEntries(shots.map((s) => [s.name, []])));
  });

  it("saw no page errors and no CSP violations", () => {
    expect(problems).toEqual([]);
  });
});
