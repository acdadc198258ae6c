// The web UI in a real browser (Debian's Chromium through playwright-core) against the example
// server with login protection on. The steps share one page and run in order, like a person
// using the app: sign in, talk, use tools, change a setting, upload, search, sign out, and get the
// sign-in screen back once the server forgot the session.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { deflateSync } from "node:zlib";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createUserStore } from "chat-gateway/http";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { HASHES } from "../http/helpers.js";
import { axeViolations as axeOf, launchChromium, missingChromium, watchProblems } from "./browser.js";
import { checkingWebSocket } from "../fixtures/frame-check.js";

const root = path.resolve(import.meta.dirname, "../..");
const resultsDir = path.join(root, "test-results");

let server: RunningServer;
let dataDir: string;
let cleanup: () => Promise<void>;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const problems: string[] = [];
type WireFrame = { type: string; payload: Record<string, any> };
const wire = { sent: [] as WireFrame[], received: [] as WireFrame[] };

/** A small PNG (a colour gradient), so the inline image has something to show. */
function png(width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = y * (width * 3 + 1) + 1 + x * 3;
      rows[at] = Math.round((x / width) * 255);
      rows[at + 1] = 90;
      rows[at + 2] = Math.round((y / height) * 255);
    }
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** The serious and critical accessibility violations of the page. */
const axeViolations = () => axeOf(page);

/** expect.poll with room for a loaded machine (bcrypt logins, streaming). */
function poll<T>(read: () => Promise<T> | T) {
  return expect.poll(read, { timeout: 10_000 });
}

async function signIn(): Promise<void> {
  await page.locator("#signin-user").fill("alice");
  await page.locator("#signin-password").fill("alice-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator('.conn[data-state="open"]').waitFor({ timeout: 15_000 });
}

async function send(text: string): Promise<void> {
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("textbox", { name: "Message" }).press("Enter");
}

// Every test fails (none is skipped) when the browser is missing.
beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  if (missingChromium) return;
  execFileSync(process.execPath, [path.join(root, "examples/server/web/build.mjs")], { stdio: "ignore" });
  const temp = await tempDir();
  dataDir = temp.dir;
  cleanup = temp.cleanup;
  await createUserStore(path.join(dataDir, "users.json")).add("alice", HASHES["alice-password"]);
  // A demo agent slow enough that a test can watch an answer stream in.
  process.env.GATEWAY_DEMO_DELAY_MS = "30";
  server = await startExample(dataDir);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  // Record every text the connection indicator shows (it can change faster than a poll).
  await context.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __conn: string[] }).__conn = seen;
    new MutationObserver(() => {
      const text = document.querySelector(".conn")?.textContent ?? "";
      if (text && seen.at(-1) !== text) seen.push(text);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  page = await context.newPage();
  // The gateway socket's text frames, both ways, to check what the UI says and gets on the wire.
  page.on("websocket", (socket) => {
    if (!socket.url().endsWith("/ws/gateway")) return;
    socket.on("framesent", (f) => typeof f.payload === "string" && wire.sent.push(JSON.parse(f.payload)));
    socket.on("framereceived", (f) => typeof f.payload === "string" && wire.received.push(JSON.parse(f.payload)));
  });
  watchProblems(page, problems);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

describe.sequential("web UI", { timeout: 40_000 }, () => {
  it("shows the sign-in screen when login is on, with no serious accessibility violations, and signs in", async () => {
    await page.goto(server.url);
    await poll(() => page.locator("#signin-user").isVisible()).toBe(true);
    expect(await axeViolations()).toEqual([]);

    await page.locator("#signin-user").fill("alice");
    await page.locator("#signin-password").fill("wrong password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await poll(() => page.getByRole("alert").textContent()).toMatch(/Wrong username or password/);

    await signIn();
    expect(await page.evaluate(() => (window as unknown as { __conn: string[] }).__conn)).toEqual(
      expect.arrayContaining(["Connecting…", "Catching up…", "Connected"]),
    );
    await poll(() => page.locator(".statusbar .user-name").textContent()).toContain("alice");
    expect(await page.getByRole("button", { name: "Sign out" }).isVisible()).toBe(true);
    expect(await page.locator(".conv-header h1").textContent()).toBe("General");
  });

  it("streams an answer, renders Markdown safely, and puts the runtime footer under it", async () => {
    const text = `The quokka says **hello** ${"and more words ".repeat(25)}<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> [click](javascript:window.__pwned=3)`;
    await send(text);
    const streaming = page.locator(".msg.assistant.streaming .body");
    await streaming.waitFor({ timeout: 5000 });
    const partial = (await streaming.textContent()) ?? "";
    const final = page.locator(".msg.assistant:not(.streaming)").last();
    await final.locator(".runtime-footer").waitFor();
    const finalText = (await final.locator(".body").textContent()) ?? "";
    expect(finalText).toContain("You said: The quokka says hello");
    expect(partial.length).toBeLessThan(finalText.length);

    expect(await final.locator(".body strong").textContent()).toBe("hello");
    expect(await page.locator(".msg img[src='x'], .msg script").count()).toBe(0);
    expect(finalText).toContain("<script>window.__pwned=2</script>");
    expect(await page.locator(".msg a[href^='javascript']").count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await final.locator(".runtime-footer [data-field=model]").textContent()).toBe("demo");
    expect(await final.locator(".runtime-footer [data-field=latency]").isVisible()).toBe(true);
    await poll(() => page.locator(".typing").textContent()).toBe("");
  });

  it("declares caps.delta and shows an answer streamed as appends exactly, emoji split across chunks included", async () => {
    expect(wire.sent.filter((f) => f.type === "hello").at(-1)?.payload.caps.delta).toBe(true);
    // Every text the streaming answer shows, recorded in the page (a half emoji never crosses to Node).
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { __streamed: string[] }).__streamed = seen;
      new MutationObserver(() => {
        const text = document.querySelector(".msg.assistant.streaming .body")?.textContent;
        if (text && seen.at(-1) !== text) seen.push(text);
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    const from = wire.received.length;
    await send("Emoji 🎉 split 👩‍💻 across the chunks 🌍🌏 of one answer ".repeat(5).trim());
    await poll(() => wire.received.slice(from).some((f) => f.type === "message.stop")).toBe(true);
    const frames = wire.received.slice(from);
    const stop = frames.find((f) => f.type === "message.stop")!;
    const updates = frames.filter(
      (f) => f.type === "message.update" && f.payload.message_id === stop.payload.message_id,
    );
    expect(updates.length).toBeGreaterThan(3);
    expect(updates.every((f) => typeof f.payload.offset === "number" && f.payload.text === undefined)).toBe(true);
    await poll(async () =>
      (await page.locator(".msg.assistant:not(.streaming) .body").last().textContent())?.trim(),
    ).toBe(stop.payload.final_text);
    const shown = await page.evaluate((final) => {
      const seen = (window as unknown as { __streamed: string[] }).__streamed;
      return { count: seen.length, notPrefixes: seen.filter((s) => !final.startsWith(s.trim())) };
    }, stop.payload.final_text as string);
    expect(shown.count).toBeGreaterThan(1);
    expect(shown.notPrefixes).toEqual([]);
  });

  it("shows tool progress as an expandable row with args, output, duration and ok state", async () => {
    await send(`tool: fetch the weather ${"for every town in the valley ".repeat(4)}`);
    const row = page.locator('.tool.ok[data-tool="echo"]').last();
    await row.waitFor();
    // The answer streams in under the finished tool row.
    await expect
      .poll(() => page.locator(".msg.assistant.streaming .body").textContent(), { timeout: 5000 })
      .toMatch(/^You said: fetch/);
    expect(await page.locator(".typing").textContent()).toContain("Agent is typing");
    await page.locator(".msg.assistant:not(.streaming) .runtime-footer").last().waitFor();
    await row.locator("summary").click();
    expect(await row.locator(".tool-args").textContent()).toContain("text: fetch the weather for every town");
    expect(await row.locator(".tool-output").textContent()).toMatch(/^fetch the weather for every town in the valley/);
    expect(await row.locator(".tool-duration").textContent()).toMatch(/\d+ (ms|s)/);
    expect(await row.locator("summary").textContent()).toContain("Tool succeeded");
  });

  it("completes slash commands from commands.catalog", async () => {
    const input = page.getByRole("textbox", { name: "Message" });
    await input.fill("/he");
    const option = page.getByRole("option", { name: /\/help/ });
    await option.waitFor();
    await input.press("Tab");
    expect(await input.inputValue()).toBe("/help ");
    await input.fill("");
  });

  it("hides a footer field and keeps it hidden after a reload", async () => {
    await page.getByRole("button", { name: "Settings" }).click();
    await page.getByRole("checkbox", { name: "Model" }).uncheck();
    await page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    const footer = page.locator(".msg.assistant .runtime-footer").last();
    expect(await footer.locator("[data-field=model]").count()).toBe(0);
    expect(await footer.locator("[data-field=latency]").count()).toBe(1);

    await page.reload();
    await page.locator('.conn[data-state="open"]').waitFor();
    await page.locator(".msg.assistant .runtime-footer").last().waitFor();
    expect(await page.locator(".runtime-footer [data-field=model]").count()).toBe(0);
    expect(await page.locator(".runtime-footer [data-field=latency]").count()).toBeGreaterThan(0);
  });

  it("uploads an image with progress and shows it inline", async () => {
    const image = png(160, 100);
    await page.locator("#file-input").setInputFiles({ name: "gradient.png", mimeType: "image/png", buffer: image });
    await page.locator('.chip.ready[data-file="gradient.png"]').waitFor();
    await send("Here is a picture");
    const img = page.locator('.msg.user .media-image img[alt="gradient.png"]').last();
    await img.waitFor();
    await poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBe(160);
    await page.locator(".msg.assistant:not(.streaming)").last().waitFor();
  });

  it("attaches other media by drag and drop and offers it as a download", async () => {
    const transfer = await page.evaluateHandle(() => {
      const data = new DataTransfer();
      data.items.add(new File(["plain notes, dropped"], "notes.txt", { type: "text/plain" }));
      return data;
    });
    await page.locator(".conversation").dispatchEvent("dragover", { dataTransfer: transfer });
    expect(await page.locator(".conversation.dragging").count()).toBe(1);
    await page.locator(".conversation").dispatchEvent("drop", { dataTransfer: transfer });
    await page.locator('.chip.ready[data-file="notes.txt"]').waitFor();
    await send("");
    const link = page.locator('.msg.user a.media-file[download="notes.txt"]').last();
    await link.waitFor();
    const href = await link.getAttribute("href");
    expect(await page.evaluate((url) => fetch(url!).then((r) => r.text()), href)).toBe("plain notes, dropped");
  });

  it("creates, renames, favorites, threads, archives and deletes channels", async () => {
    const sidebar = page.getByRole("navigation", { name: "Channels" });
    const dialogInput = page.getByRole("dialog").getByRole("textbox");
    const menu = async (item: string) => {
      await page.getByLabel("Channel actions").click();
      await page.getByRole("menuitem", { name: item }).click();
    };
    await sidebar.getByRole("button", { name: "+ New" }).click();
    await dialogInput.fill("Projects");
    await page.getByRole("dialog").getByRole("button", { name: "Create" }).click();
    await poll(() => page.locator(".conv-header h1").textContent()).toBe("Projects");

    await menu("Rename…");
    await dialogInput.fill("Yard work");
    await page.getByRole("dialog").getByRole("button", { name: "Rename" }).click();
    await poll(() => page.locator(".conv-header h1").textContent()).toBe("Yard work");
    const names = () => page.locator(".sidebar > .channel-list > li > button.channel .channel-name").allTextContents();
    expect(await names()).toEqual(["General", "Yard work"]);
    await menu("Add to favorites");
    await poll(names).toEqual(["Yard work", "General"]);
    expect(await sidebar.locator('button.channel:has-text("Yard work") .avatar').textContent()).toBe("Y");

    await menu("New thread");
    await dialogInput.fill("Fence");
    await page.getByRole("dialog").getByRole("button", { name: "Create" }).click();
    await poll(() => page.locator(".conv-header h1").textContent()).toBe("Yard work › Fence");
    expect(await sidebar.locator(".threads button.channel").allTextContents()).toEqual(["↳Fence"]);

    await sidebar.locator('button.channel:has-text("Yard work")').first().click();
    await menu("Archive");
    await poll(() => sidebar.locator("details.archived summary").textContent()).toBe("Archived (1)");
    expect(await names()).toEqual(["General"]);
    await menu("Delete…");
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await poll(() => page.locator(".conv-header h1").textContent()).toBe("General");
    expect(await sidebar.locator("details.archived").count()).toBe(0);
  });

  it("starts a thread with the auto-thread toggle", async () => {
    await page.getByRole("checkbox", { name: "Auto-thread" }).check();
    await send("Plan the garden party");
    await expect.poll(() => page.locator(".conv-header h1").textContent(), { timeout: 10_000 }).toMatch(/^General › /);
    await page.locator(".msg.assistant:not(.streaming) .runtime-footer").last().waitFor();
    expect(await page.locator(".msg.assistant .body").last().textContent()).toContain(
      "You said: Plan the garden party",
    );
    expect(await page.locator(".sidebar .threads button.channel").count()).toBe(1);
    expect(await page.getByRole("checkbox", { name: "Auto-thread" }).isVisible()).toBe(false);
    await page.locator('.sidebar button.channel:has-text("General")').click();
  });

  it("shows channels another device creates (automation without a composer, colour, icon) and pages back through history when scrolled up", async () => {
    const { token } = await page.evaluate(async () => {
      const res = await fetch("/api/auth/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "alice", password: "alice-password" }),
      });
      return res.json();
    });
    const { createGatewayClient } = await import("chat-gateway/client");
    const other = createGatewayClient({
      url: `${server.url.replace("http", "ws")}/ws/gateway`,
      token,
      headers: { authorization: `Bearer ${token}` },
      pingIntervalMs: 0,
      WebSocket: checkingWebSocket(true),
    });
    try {
      await other.connect();
      const ch = await other.request("channel.create", { name: "Long history", kind: "channel" });
      await page.locator('.sidebar button.channel:has-text("Long history")').waitFor();
      await other.request("channel.create", {
        name: "Nightly jobs",
        kind: "channel",
        automation: true,
        color: "#ffcc00",
      });
      const icon = png(8, 8).toString("base64");
      await other.request("channel.create", { name: "Pictured", kind: "channel", icon });
      const nightly = page.locator('.sidebar button.channel:has-text("Nightly jobs")');
      await nightly.waitFor();
      expect(
        await nightly
          .locator(".avatar")
          .evaluate((el) => [el.textContent, getComputedStyle(el).backgroundColor, getComputedStyle(el).color]),
      ).toEqual(["N", "rgb(255, 204, 0)", "rgb(17, 17, 17)"]);
      expect(await page.locator('.sidebar button.channel:has-text("Pictured") img.avatar').getAttribute("src")).toBe(
        `data:image/png;base64,${icon}`,
      );
      await nightly.click();
      await page.locator(".readonly-note").waitFor();
      expect(await page.locator("form.composer").isVisible()).toBe(false);
      for (let i = 0; i < 32; i++) {
        const stop = new Promise<void>((resolve) => other.once("message.stop", () => resolve()));
        await other.sendMessage({ chat_id: ch.chat_id, text: `line ${i}` });
        await stop;
      }
    } finally {
      other.close();
    }
    await page.locator('.sidebar button.channel:has-text("Long history")').click();
    await page.locator(".msg").first().waitFor();
    await poll(() => page.locator(".msg").count()).toBe(50);
    expect(await page.locator(".msg .body").first().textContent()).not.toContain("line 0");
    await page.locator(".messages").evaluate((el) => el.scrollTo(0, 0));
    await poll(() => page.locator(".msg").count()).toBe(64);
    expect((await page.locator(".msg .body").first().textContent())?.trim()).toBe("line 0");
    expect(await page.locator(".history-start").count()).toBe(1);
  });

  it("searches and jumps to the message", async () => {
    const search = page.getByRole("searchbox", { name: "Search messages" });
    await search.fill("quokka");
    await search.press("Enter");
    const hit = page.locator("button.hit").filter({ hasText: "quokka" }).last();
    await hit.waitFor();
    await hit.click();
    const target = page.locator(".msg.highlight");
    await target.waitFor();
    expect(await target.textContent()).toContain("quokka");
    expect(await target.isVisible()).toBe(true);
    await page.getByRole("button", { name: "Close search results" }).click();
  });

  it("keeps a screenshot of the conversation view, which passes the accessibility check", async () => {
    // Tool progress is live only (not in history): show one in the picture.
    await send("tool: look up **Markdown** rendering");
    const row = page.locator('.tool.ok[data-tool="echo"]').last();
    await row.waitFor();
    await row.locator("summary").click();
    await page.locator(".msg.assistant:not(.streaming)").last().locator(".runtime-footer").waitFor();
    await page.locator(".messages").evaluate((el) => (el.scrollTop = el.scrollHeight));
    mkdirSync(resultsDir, { recursive: true });
    await page.screenshot({ path: path.join(resultsDir, "conversation.png") });
    expect(existsSync(path.join(resultsDir, "conversation.png"))).toBe(true);
    expect(await axeViolations()).toEqual([]);
  });

  it("signs out to the sign-in screen", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.locator("#signin-user").waitFor();
    expect(await page.locator(".signin-notice").textContent()).toMatch(/signed out/);
    const status = await page.evaluate(() => fetch("/api/auth/status").then((r) => r.json()));
    expect(status).toMatchObject({ enabled: true, user: null });
  });

  it("shows the sign-in screen again after the server forgets the session (restart)", async () => {
    await signIn();
    const port = server.port;
    await page.evaluate(() => ((window as unknown as { __conn: string[] }).__conn.length = 0));
    await server.close();
    server = await startExample(dataDir, port);
    await page.locator("#signin-user").waitFor({ timeout: 20_000 });
    expect(
      (await page.evaluate(() => (window as unknown as { __conn: string[] }).__conn)).some((t) =>
        t.startsWith("Reconnecting"),
      ),
    ).toBe(true);
    expect(await page.locator(".signin-notice").textContent()).toMatch(/session has ended/);
    await signIn();
    // The history arrives after the socket opens: wait for it rather than count at once (a busy
    // machine's run found none yet).
    await page.locator(".msg").first().waitFor({ timeout: 15_000 });
    expect(await page.locator(".msg").count()).toBeGreaterThan(0);
  });

  it("saw no page errors and no CSP violations", () => {
    expect(problems).toEqual([]);
  });
});
