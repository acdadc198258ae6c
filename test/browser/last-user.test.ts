// Removing the last user turns login off (docs/PROTOCOL.md §9, §10.4): no sign-in can succeed any
// more, so an open tab must not be left on a sign-in form. In Chromium against the example server:
// a signed-in tab, and a tab that already shows the sign-in form, both go back to the app in local
// mode, where a message gets its answer.
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createUserStore } from "chat-gateway/login";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { HASHES } from "../http/helpers.js";
import { launchChromium, missingChromium, poll, watchProblems } from "./browser.js";

let server: RunningServer;
let usersFile: string;
let cleanup: () => Promise<void>;
let browser: Browser;
const problems: string[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  if (missingChromium) return;
  const temp = await tempDir();
  cleanup = temp.cleanup;
  usersFile = path.join(temp.dir, "users.json");
  process.env.GATEWAY_DEMO_DELAY_MS = "5";
  server = await startExample(temp.dir);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

async function openTab(): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  watchProblems(page, problems);
  await page.goto(server.url);
  return page;
}

async function signIn(page: Page): Promise<void> {
  await page.locator("#signin-user").waitFor({ timeout: 15_000 });
  await page.locator("#signin-user").fill("alice");
  await page.locator("#signin-password").fill("alice-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
}

/** The tab works in local mode: no sign-in form, the socket open, and a message answered. */
async function expectLocalMode(page: Page, text: string): Promise<void> {
  // A tab whose session ended may draw the sign-in form for a moment before it asks whether login
  // is still on; it must not stay there.
  await page.locator("#signin-user").waitFor({ state: "detached", timeout: 15_000 });
  await page.getByRole("textbox", { name: "Message" }).waitFor({ timeout: 15_000 });
  await page.locator('.conn[data-state="open"]').waitFor({ timeout: 15_000 });
  expect(await page.evaluate(() => fetch("/api/auth/status").then((r) => r.json()))).toMatchObject({
    enabled: false,
    user: null,
  });
  await page.getByRole("textbox", { name: "Message" }).fill(text);
  await page.getByRole("textbox", { name: "Message" }).press("Enter");
  await poll(() => page.locator(".msg", { hasText: `You said: ${text}` }).count()).toBeGreaterThan(0);
}

describe("removing the last user", () => {
  it("a signed-in tab goes back to the app in local mode instead of a sign-in form that cannot succeed", async () => {
    const users = createUserStore(usersFile);
    await users.add("alice", HASHES["alice-password"]);
    const page = await openTab();
    await signIn(page);
    // The tab's session ends with its user: the socket it opens after that is the local mode's.
    // Checked before it, the tab could still show the signed-in app it is about to leave.
    const reopened = page.waitForEvent("websocket", { timeout: 20_000 });
    await users.remove("alice");
    await reopened;
    await expectLocalMode(page, "still here");
  });

  it("a tab showing the sign-in form opens the app once login is off", async () => {
    const users = createUserStore(usersFile);
    await users.add("alice", HASHES["alice-password"]);
    const page = await openTab();
    await page.locator("#signin-user").waitFor({ timeout: 15_000 });
    await users.remove("alice");
    await expectLocalMode(page, "hello again");
  });

  it("saw no page errors and no CSP violations", () => {
    expect(problems).toEqual([]);
  });
});
