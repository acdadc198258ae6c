// The web UI in a real browser (Debian's Chromium through playwright-core) against the example
// server with login protection on. The steps share one page and run in order, like a person
// using the app: sign in, talk, use tools, change a setting, upload, search, sign out, and get the
// sign-in screen back once the server forgot the session.
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { png } from "../fixtures/png.js";
import { checkingWebSocket } from "../fixtures/frame-check.js";
import { appSession } from "./app-session.js";
import { axeViolations, poll, resultsDir } from "./browser.js";

const app = appSession();

describe.sequential("web UI", { timeout: 40_000 }, () => {
  it("shows the sign-in screen when login is on, with no serious accessibility violations, and signs in", async () => {
    await app.page.goto(app.server.url);
    await poll(() => app.page.locator("#signin-user").isVisible()).toBe(true);
    expect(await axeViolations(app.page)).toEqual([]);

    await app.page.locator("#signin-user").fill("alice");
    await app.page.locator("#signin-password").fill("wrong password");
    await app.page.getByRole("button", { name: "Sign in" }).click();
    await poll(() => app.page.getByRole("alert").textContent()).toMatch(/Wrong username or password/);

    await app.signIn();
    expect(await app.page.evaluate(() => (window as unknown as { __conn: string[] }).__conn)).toEqual(
      expect.arrayContaining(["Connecting…", "Catching up…", "Connected"]),
    );
    await poll(() => app.page.locator(".statusbar .user-name").textContent()).toContain("alice");
    expect(await app.page.getByRole("button", { name: "Sign out" }).isVisible()).toBe(true);
    expect(await app.page.locator(".conv-header h1").textContent()).toBe("General");
  });

  it("streams an answer, renders Markdown safely, and puts the runtime footer under it", async () => {
    const text = `The quokka says **hello** ${"and more words ".repeat(25)}<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> [click](javascript:window.__pwned=3)`;
    await app.send(text);
    const streaming = app.page.locator(".msg.assistant.streaming .body");
    await streaming.waitFor({ timeout: 5000 });
    const partial = (await streaming.textContent()) ?? "";
    const final = app.page.locator(".msg.assistant:not(.streaming)").last();
    await final.locator(".runtime-footer").waitFor();
    const finalText = (await final.locator(".body").textContent()) ?? "";
    expect(finalText).toContain("You said: The quokka says hello");
    expect(partial.length).toBeLessThan(finalText.length);

    expect(await final.locator(".body strong").textContent()).toBe("hello");
    expect(await app.page.locator(".msg img[src='x'], .msg script").count()).toBe(0);
    expect(finalText).toContain("<script>window.__pwned=2</script>");
    expect(await app.page.locator(".msg a[href^='javascript']").count()).toBe(0);
    expect(await app.page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await final.locator(".runtime-footer [data-field=model]").textContent()).toBe("demo");
    expect(await final.locator(".runtime-footer [data-field=latency]").isVisible()).toBe(true);
    await poll(() => app.page.locator(".typing").textContent()).toBe("");
  });

  it("declares caps.delta and shows an answer streamed as appends exactly, emoji split across chunks included", async () => {
    expect(app.wire.sent.filter((f) => f.type === "hello").at(-1)?.payload.caps.delta).toBe(true);
    // Every text the streaming answer shows, recorded in the page (a half emoji never crosses to Node).
    await app.page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { __streamed: string[] }).__streamed = seen;
      new MutationObserver(() => {
        const text = document.querySelector(".msg.assistant.streaming .body")?.textContent;
        if (text && seen.at(-1) !== text) seen.push(text);
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    const from = app.wire.received.length;
    await app.send("Emoji 🎉 split 👩‍💻 across the chunks 🌍🌏 of one answer ".repeat(5).trim());
    await poll(() => app.wire.received.slice(from).some((f) => f.type === "message.stop")).toBe(true);
    const frames = app.wire.received.slice(from);
    const stop = frames.find((f) => f.type === "message.stop")!;
    const updates = frames.filter(
      (f) => f.type === "message.update" && f.payload.message_id === stop.payload.message_id,
    );
    expect(updates.length).toBeGreaterThan(3);
    expect(updates.every((f) => typeof f.payload.offset === "number" && f.payload.text === undefined)).toBe(true);
    await poll(async () =>
      (await app.page.locator(".msg.assistant:not(.streaming) .body").last().textContent())?.trim(),
    ).toBe(stop.payload.final_text);
    const shown = await app.page.evaluate((final) => {
      const seen = (window as unknown as { __streamed: string[] }).__streamed;
      return { count: seen.length, notPrefixes: seen.filter((s) => !final.startsWith(s.trim())) };
    }, stop.payload.final_text as string);
    expect(shown.count).toBeGreaterThan(1);
    expect(shown.notPrefixes).toEqual([]);
  });

  it("shows tool progress as an expandable row with args, output, duration and ok state", async () => {
    await app.send(`tool: fetch the weather ${"for every town in the valley ".repeat(4)}`);
    const row = app.page.locator('.tool.ok[data-tool="echo"]').last();
    await row.waitFor();
    // The answer streams in under the finished tool row.
    await expect
      .poll(() => app.page.locator(".msg.assistant.streaming .body").textContent(), { timeout: 5000 })
      .toMatch(/^You said: fetch/);
    expect(await app.page.locator(".typing").textContent()).toContain("Agent is typing");
    await app.page.locator(".msg.assistant:not(.streaming) .runtime-footer").last().waitFor();
    await row.locator("summary").click();
    expect(await row.locator(".tool-args").textContent()).toContain("text: fetch the weather for every town");
    expect(await row.locator(".tool-output").textContent()).toMatch(/^fetch the weather for every town in the valley/);
    expect(await row.locator(".tool-duration").textContent()).toMatch(/\d+ (ms|s)/);
    expect(await row.locator("summary").textContent()).toContain("Tool succeeded");
  });

  it("completes slash commands from commands.catalog", async () => {
    const input = app.page.getByRole("textbox", { name: "Message" });
    await input.fill("/he");
    const option = app.page.getByRole("option", { name: /\/help/ });
    await option.waitFor();
    await input.press("Tab");
    expect(await input.inputValue()).toBe("/help ");
    await input.fill("");
  });

  it("hides a footer field and keeps it hidden after a reload", async () => {
    await app.page.getByRole("button", { name: "Settings" }).click();
    await app.page.getByRole("checkbox", { name: "Model" }).uncheck();
    await app.page.getByRole("dialog").getByRole("button", { name: "Close" }).click();
    const footer = app.page.locator(".msg.assistant .runtime-footer").last();
    expect(await footer.locator("[data-field=model]").count()).toBe(0);
    expect(await footer.locator("[data-field=latency]").count()).toBe(1);

    await app.page.reload();
    await app.page.locator('.conn[data-state="open"]').waitFor();
    await app.page.locator(".msg.assistant .runtime-footer").last().waitFor();
    expect(await app.page.locator(".runtime-footer [data-field=model]").count()).toBe(0);
    expect(await app.page.locator(".runtime-footer [data-field=latency]").count()).toBeGreaterThan(0);
  });

  it("uploads an image with progress and shows it inline", async () => {
    const image = png(160, 100);
    await app.page.locator("#file-input").setInputFiles({ name: "gradient.png", mimeType: "image/png", buffer: image });
    await app.page.locator('.chip.ready[data-file="gradient.png"]').waitFor();
    await app.send("Here is a picture");
    const img = app.page.locator('.msg.user .media-image img[alt="gradient.png"]').last();
    await img.waitFor();
    await poll(() => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBe(160);
    await app.page.locator(".msg.assistant:not(.streaming)").last().waitFor();
  });

  it("attaches other media by drag and drop and offers it as a download", async () => {
    const transfer = await app.page.evaluateHandle(() => {
      const data = new DataTransfer();
      data.items.add(new File(["plain notes, dropped"], "notes.txt", { type: "text/plain" }));
      return data;
    });
    await app.page.locator(".conversation").dispatchEvent("dragover", { dataTransfer: transfer });
    expect(await app.page.locator(".conversation.dragging").count()).toBe(1);
    await app.page.locator(".conversation").dispatchEvent("drop", { dataTransfer: transfer });
    await app.page.locator('.chip.ready[data-file="notes.txt"]').waitFor();
    await app.send("");
    const link = app.page.locator('.msg.user a.media-file[download="notes.txt"]').last();
    await link.waitFor();
    const href = await link.getAttribute("href");
    expect(await app.page.evaluate((url) => fetch(url!).then((r) => r.text()), href)).toBe("plain notes, dropped");
  });

  it("creates, renames, favorites, threads, archives and deletes channels", async () => {
    const sidebar = app.page.getByRole("navigation", { name: "Channels" });
    const dialogInput = app.page.getByRole("dialog").getByRole("textbox");
    const menu = async (item: string) => {
      await app.page.getByLabel("Channel actions").click();
      await app.page.getByRole("menuitem", { name: item }).click();
    };
    await sidebar.getByRole("button", { name: "+ New" }).click();
    await dialogInput.fill("Projects");
    await app.page.getByRole("dialog").getByRole("button", { name: "Create" }).click();
    await poll(() => app.page.locator(".conv-header h1").textContent()).toBe("Projects");

    await menu("Rename…");
    await dialogInput.fill("Yard work");
    await app.page.getByRole("dialog").getByRole("button", { name: "Rename" }).click();
    await poll(() => app.page.locator(".conv-header h1").textContent()).toBe("Yard work");
    const names = () =>
      app.page.locator(".sidebar > .channel-list > li > button.channel .channel-name").allTextContents();
    expect(await names()).toEqual(["General", "Yard work"]);
    await menu("Add to favorites");
    await poll(names).toEqual(["Yard work", "General"]);
    expect(await sidebar.locator('button.channel:has-text("Yard work") .avatar').textContent()).toBe("Y");

    await menu("New thread");
    await dialogInput.fill("Fence");
    await app.page.getByRole("dialog").getByRole("button", { name: "Create" }).click();
    await poll(() => app.page.locator(".conv-header h1").textContent()).toBe("Yard work › Fence");
    expect(await sidebar.locator(".threads button.channel").allTextContents()).toEqual(["↳Fence"]);

    await sidebar.locator('button.channel:has-text("Yard work")').first().click();
    await menu("Archive");
    await poll(() => sidebar.locator("details.archived summary").textContent()).toBe("Archived (1)");
    expect(await names()).toEqual(["General"]);
    await menu("Delete…");
    await app.page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await poll(() => app.page.locator(".conv-header h1").textContent()).toBe("General");
    expect(await sidebar.locator("details.archived").count()).toBe(0);
  });

  it("starts a thread with the auto-thread toggle", async () => {
    await app.page.getByRole("checkbox", { name: "Auto-thread" }).check();
    await app.send("Plan the garden party");
    await expect
      .poll(() => app.page.locator(".conv-header h1").textContent(), { timeout: 10_000 })
      .toMatch(/^General › /);
    await app.page.locator(".msg.assistant:not(.streaming) .runtime-footer").last().waitFor();
    expect(await app.page.locator(".msg.assistant .body").last().textContent()).toContain(
      "You said: Plan the garden party",
    );
    expect(await app.page.locator(".sidebar .threads button.channel").count()).toBe(1);
    expect(await app.page.getByRole("checkbox", { name: "Auto-thread" }).isVisible()).toBe(false);
    await app.page.locator('.sidebar button.channel:has-text("General")').click();
  });

  it("shows channels another device creates (automation without a composer, colour, icon) and pages back through history when scrolled up", async () => {
    const { token } = await app.page.evaluate(async () => {
      const res = await fetch("/api/auth/login", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "alice", password: "alice-password" }),
      });
      return res.json();
    });
    const { createGatewayClient } = await import("chat-gateway/client");
    const other = createGatewayClient({
      url: `${app.server.url.replace("http", "ws")}/ws/gateway`,
      token,
      headers: { authorization: `Bearer ${token}` },
      pingIntervalMs: 0,
      WebSocket: checkingWebSocket(true),
    });
    try {
      await other.connect();
      const ch = await other.request("channel.create", { name: "Long history", kind: "channel" });
      await app.page.locator('.sidebar button.channel:has-text("Long history")').waitFor();
      await other.request("channel.create", {
        name: "Nightly jobs",
        kind: "channel",
        automation: true,
        color: "#ffcc00",
      });
      const icon = png(8, 8).toString("base64");
      await other.request("channel.create", { name: "Pictured", kind: "channel", icon });
      const nightly = app.page.locator('.sidebar button.channel:has-text("Nightly jobs")');
      await nightly.waitFor();
      expect(
        await nightly
          .locator(".avatar")
          .evaluate((el) => [el.textContent, getComputedStyle(el).backgroundColor, getComputedStyle(el).color]),
      ).toEqual(["N", "rgb(255, 204, 0)", "rgb(17, 17, 17)"]);
      expect(
        await app.page.locator('.sidebar button.channel:has-text("Pictured") img.avatar').getAttribute("src"),
      ).toBe(`data:image/png;base64,${icon}`);
      await nightly.click();
      await app.page.locator(".readonly-note").waitFor();
      expect(await app.page.locator("form.composer").isVisible()).toBe(false);
      for (let i = 0; i < 32; i++) {
        const stop = new Promise<void>((resolve) => other.once("message.stop", () => resolve()));
        await other.sendMessage({ chat_id: ch.chat_id, text: `line ${i}` });
        await stop;
      }
    } finally {
      other.close();
    }
    await app.page.locator('.sidebar button.channel:has-text("Long history")').click();
    await app.page.locator(".msg").first().waitFor();
    await poll(() => app.page.locator(".msg").count()).toBe(50);
    expect(await app.page.locator(".msg .body").first().textContent()).not.toContain("line 0");
    await app.page.locator(".messages").evaluate((el) => el.scrollTo(0, 0));
    await poll(() => app.page.locator(".msg").count()).toBe(64);
    expect((await app.page.locator(".msg .body").first().textContent())?.trim()).toBe("line 0");
    expect(await app.page.locator(".history-start").count()).toBe(1);
  });

  it("searches and jumps to the message", async () => {
    const search = app.page.getByRole("searchbox", { name: "Search messages" });
    await search.fill("quokka");
    await search.press("Enter");
    const hit = app.page.locator("button.hit").filter({ hasText: "quokka" }).last();
    await hit.waitFor();
    await hit.click();
    const target = app.page.locator(".msg.highlight");
    await target.waitFor();
    expect(await target.textContent()).toContain("quokka");
    expect(await target.isVisible()).toBe(true);
    await app.page.getByRole("button", { name: "Close search results" }).click();
  });

  it("keeps a screenshot of the conversation view, which passes the accessibility check", async () => {
    // Tool progress is live only (not in history): show one in the picture.
    await app.send("tool: look up **Markdown** rendering");
    const row = app.page.locator('.tool.ok[data-tool="echo"]').last();
    await row.waitFor();
    await row.locator("summary").click();
    await app.page.locator(".msg.assistant:not(.streaming)").last().locator(".runtime-footer").waitFor();
    await app.page.locator(".messages").evaluate((el) => (el.scrollTop = el.scrollHeight));
    mkdirSync(resultsDir, { recursive: true });
    await app.page.screenshot({ path: path.join(resultsDir, "conversation.png") });
    expect(existsSync(path.join(resultsDir, "conversation.png"))).toBe(true);
    expect(await axeViolations(app.page)).toEqual([]);
  });

  it("signs out to the sign-in screen", async () => {
    await app.page.getByRole("button", { name: "Sign out" }).click();
    await app.page.locator("#signin-user").waitFor();
    expect(await app.page.locator(".signin-notice").textContent()).toMatch(/signed out/);
    const status = await app.page.evaluate(() => fetch("/api/auth/status").then((r) => r.json()));
    expect(status).toMatchObject({ enabled: true, user: null });
  });

  it("shows the sign-in screen again after the server forgets the session (restart)", async () => {
    await app.signIn();
    await app.page.evaluate(() => ((window as unknown as { __conn: string[] }).__conn.length = 0));
    await app.restart();
    await app.page.locator("#signin-user").waitFor({ timeout: 20_000 });
    expect(
      (await app.page.evaluate(() => (window as unknown as { __conn: string[] }).__conn)).some((t) =>
        t.startsWith("Offline: reconnecting"),
      ),
    ).toBe(true);
    expect(await app.page.locator(".signin-notice").textContent()).toMatch(/session has ended/);
    await app.signIn();
    // The history arrives after the socket opens: wait for it rather than count at once (a busy
    // machine's run found none yet).
    await app.page.locator(".msg").first().waitFor({ timeout: 15_000 });
    expect(await app.page.locator(".msg").count()).toBeGreaterThan(0);
  });

  it("saw no page errors and no CSP violations", () => {
    expect(app.problems).toEqual([]);
  });
});
