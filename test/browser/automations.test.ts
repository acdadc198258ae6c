// Automation channels in the web UI (docs/PROTOCOL.md §17), in Chromium against the example server
// with login on: a webhook post raises a notification badge on its channel in the sidebar; the
// channel shows its hooks and schedules (cron, time zone, next run, last result) read-only; a
// screenshot is kept in test-results/automations.png.
import path from "node:path";
import { Writable } from "node:stream";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createUserStore } from "chat-gateway/login";
import { signHookBody } from "chat-gateway/hooks";
import type { RunningServer } from "../../examples/server/server.js";
import { runHookCli } from "../../examples/server/hook-cli.js";
import { runScheduleCli } from "../../examples/server/schedule-cli.js";
import { startExample, tempDir } from "../client/helpers.js";
import { HASHES, request } from "../http/helpers.js";
import {
  axeViolations,
  buildWebUi,
  launchChromium,
  missingChromium,
  poll,
  resultsDir,
  watchProblems,
} from "./browser.js";

let server: RunningServer;
let dataDir: string;
let cleanup: () => Promise<void>;
let browser: Browser;
let page: Page;
const problems: string[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  if (missingChromium) return;
  buildWebUi();
  const temp = await tempDir();
  cleanup = temp.cleanup;
  dataDir = temp.dir;
  await createUserStore(path.join(dataDir, "users.json")).add("alice", HASHES["alice-password"]);
  process.env.GATEWAY_DEMO_DELAY_MS = "0";
  server = await startExample(dataDir);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

/** Runs a `hook` or `schedule` command against the running server; its stdout. */
async function cli(run: typeof runHookCli, args: string[]): Promise<string> {
  let out = "";
  let err = "";
  const sink = (add: (s: string) => void) =>
    new Writable({
      write: (chunk, _enc, done) => {
        add(String(chunk));
        done();
      },
    });
  const code = await run(args, dataDir, { stdout: sink((s) => (out += s)), stderr: sink((s) => (err += s)) });
  expect(code, err).toBe(0);
  return out;
}

describe.sequential("automation channels in the web UI", { timeout: 90_000 }, () => {
  it("a post raises a badge on its channel; the channel lists its hooks and schedules read-only", async () => {
    const added = await cli(runHookCli, ["add", "ci", "--channel", "Reports", "--user", "alice"]);
    const hookId = /^hook_id: (\S+)$/m.exec(added)![1]!;
    const secret = /^secret: (\S+)$/m.exec(added)![1]!;
    await cli(runScheduleCli, [
      "add",
      "nightly",
      "--cron",
      "0 3 * * *",
      "--tz",
      "Europe/Berlin",
      "--channel",
      "Reports",
      "--prompt",
      "summarise the day",
      "--user",
      "alice",
    ]);
    await cli(runScheduleCli, ["run", "nightly", "--user", "alice"]);
    await poll(async () => /\tok at /.test(await cli(runScheduleCli, ["list", "--user", "alice"]))).toBe(true);

    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    watchProblems(page, problems);
    await page.goto(server.url);
    await page.locator("#signin-user").fill("alice");
    await page.locator("#signin-password").fill("alice-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    const reports = page.locator(".sidebar .channel", { hasText: "Reports" });
    await expect(reports.locator(".post-badge").count()).resolves.toBe(0);

    const body = JSON.stringify({ text: "build 42 passed", title: "CI" });
    const posted = await request(server.url, {
      method: "POST",
      path: `/api/hooks/${hookId}`,
      headers: { "content-type": "application/json", "x-hook-signature": signHookBody(secret, body) },
      body,
    });
    expect(posted.status).toBe(202);
    await poll(() => reports.locator(".post-badge").textContent()).toContain("1 new posts");

    await reports.click();
    await poll(() => page.locator(".automations").isVisible()).toBe(true);
    await expect(reports.locator(".post-badge").count()).resolves.toBe(0);
    const panel = page.locator(".automations");
    await poll(() => panel.locator(".hooks li").allTextContents()).toEqual(["webhookciposts as is"]);
    const schedule = (await panel.locator(".schedules li").allTextContents()).join("");
    expect(schedule).toMatch(/^schedulenightly0 3 \* \* \*Europe\/Berlinnext: .+ok, .+$/);
    // Read-only: no composer, no way to change them here.
    await expect(page.locator(".readonly-note").isVisible()).resolves.toBe(true);
    await expect(panel.locator("button, input").count()).resolves.toBe(0);
    await poll(() =>
      page
        .locator(".msg")
        .allTextContents()
        .then((t) => t.join(" ")),
    ).toContain("build 42 passed");
    await page.screenshot({ path: path.join(resultsDir, "automations.png") });
    expect(await axeViolations(page)).toEqual([]);

    // Another channel hides the panel.
    await page.locator(".sidebar .channel", { hasText: "General" }).click();
    await poll(() => page.locator(".automations").isVisible()).toBe(false);
    expect(problems).toEqual([]);
  });
});
