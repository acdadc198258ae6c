// A pairing link asks the person before it signs the browser in (docs/PROTOCOL.md §16): in
// Chromium against the example server, a tab signed in as alice that opens bob's `/?pair=<code>`
// is asked "Join bob on this browser?", told it leaves alice, stays alice on "Not now", and
// becomes bob only on "Join bob". Screenshots of the question go to /tmp/pairui-*.png.
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createUserStore } from "chat-gateway/login";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { bearer, HASHES, login, request } from "../http/helpers.js";
import { axeViolations, buildWebUi, launchChromium, missingChromium, poll, watchProblems } from "./browser.js";

let server: RunningServer;
let cleanup: () => Promise<void>;
let browser: Browser;
const problems: string[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  if (missingChromium) return;
  buildWebUi();
  const temp = await tempDir();
  cleanup = temp.cleanup;
  const users = createUserStore(path.join(temp.dir, "users.json"));
  await users.add("alice", HASHES["alice-password"]);
  await users.add("bob", HASHES["bob-password"]);
  process.env.GATEWAY_DEMO_DELAY_MS = "5";
  server = await startExample(temp.dir);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await cleanup?.();
});

/** A new pairing code of bob's, made as Settings → Pair a device makes it. */
async function bobsCode(): Promise<string> {
  const session = (await login(server.url, "bob", "bob-password")).body.token as string;
  const made = await request(server.url, {
    method: "POST",
    path: "/api/devices/pair",
    headers: { "content-type": "application/json", ...bearer(session) },
    body: "{}",
  });
  expect(made.status).toBe(200);
  return made.body.code as string;
}

/** Whom the tab's cookie signs in, as the server sees it. */
function signedInAs(page: Page): Promise<string | null> {
  return page.evaluate(async () => ((await (await fetch("/api/auth/status")).json()) as { user: string | null }).user);
}

async function openTab(): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1000, height: 760 } })).newPage();
  watchProblems(page, problems);
  return page;
}

const question = (page: Page) => page.getByRole("dialog", { name: "Join bob on this browser?" });

describe.sequential("a pairing link asks first", { timeout: 60_000 }, () => {
  let alice: Page;

  it("a tab signed in as alice that opens bob's link is asked, naming bob and that it leaves alice", async () => {
    alice = await openTab();
    await alice.goto(server.url);
    await alice.locator("#signin-user").fill("alice");
    await alice.locator("#signin-password").fill("alice-password");
    await alice.getByRole("button", { name: "Sign in" }).click();
    await alice.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });

    const code = await bobsCode();
    await alice.goto(`${server.url}/?pair=${code}`);
    await question(alice).waitFor({ timeout: 15_000 });
    const text = await question(alice).textContent();
    expect(text).toContain("signs this browser in as bob");
    expect(text).toContain("You are signed in as alice: joining signs you out of alice on this browser.");
    expect(await alice.getByRole("button", { name: "Join bob" }).count()).toBe(1);
    expect(await axeViolations(alice)).toEqual([]);
    await alice.screenshot({ path: "/tmp/pairui-signed-in.png" });
    // Nothing was redeemed while the question waits: still alice, and the code is still good.
    expect(await signedInAs(alice)).toBe("alice");
    const looked = await request(server.url, {
      method: "POST",
      path: "/api/devices/lookup",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code }),
    });
    expect(looked.body.username).toBe("bob");

    await alice.getByRole("button", { name: "Not now" }).click();
    await alice.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    expect(await question(alice).count()).toBe(0);
    expect(new URL(alice.url()).search).toBe(""); // "Not now" takes the code off the address
    expect(await signedInAs(alice)).toBe("alice");
    await alice.reload();
    await alice.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    expect(await question(alice).count()).toBe(0);
    expect(await signedInAs(alice)).toBe("alice");
  });

  it("Escape is a no as well", async () => {
    await alice.goto(`${server.url}/?pair=${await bobsCode()}`);
    await question(alice).waitFor({ timeout: 15_000 });
    await alice.keyboard.press("Escape");
    await alice.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    expect(await question(alice).count()).toBe(0);
    expect(await signedInAs(alice)).toBe("alice");
  });

  it("'Join bob' pairs the tab as a device of bob's, signed in as bob", async () => {
    await alice.goto(`${server.url}/?pair=${await bobsCode()}`);
    await question(alice).waitFor({ timeout: 15_000 });
    await alice.getByRole("button", { name: "Join bob" }).click();
    await poll(() => signedInAs(alice)).toBe("bob");
    await alice.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    expect(new URL(alice.url()).search).toBe("");
    const devices = await alice.evaluate(
      async () => (await (await fetch("/api/devices")).json()) as { devices: unknown[] },
    );
    expect(devices.devices).toEqual([expect.objectContaining({ name: expect.stringMatching(/^Web \(/) })]);
    await alice.screenshot({ path: "/tmp/pairui-joined.png" });
  });

  it("a browser signed in nowhere is asked too, without a word of signing out, and joins on yes", async () => {
    const fresh = await openTab();
    await fresh.goto(`${server.url}/?pair=${await bobsCode()}`);
    await question(fresh).waitFor({ timeout: 15_000 });
    expect(await question(fresh).textContent()).not.toContain("signs you out");
    expect(await signedInAs(fresh)).toBeNull();
    await fresh.screenshot({ path: "/tmp/pairui-signed-out.png" });
    await fresh.getByRole("button", { name: "Join bob" }).click();
    await fresh.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    expect(await signedInAs(fresh)).toBe("bob");
    expect(await fresh.locator("#signin-user").count()).toBe(0);
  });

  it("a spent code says so, and leaves the signed-in tab as it was", async () => {
    const code = await bobsCode();
    const spent = await request(server.url, {
      method: "POST",
      path: "/api/devices/redeem",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code, confirm: true }),
    });
    expect(spent.status).toBe(200);
    await alice.goto(`${server.url}/?pair=${code}`);
    const failed = alice.getByRole("dialog", { name: "Pairing failed" });
    await failed.waitFor({ timeout: 15_000 });
    expect(await failed.textContent()).toContain("invalid, used or expired pairing code");
    await alice.screenshot({ path: "/tmp/pairui-spent.png" });
    expect(await signedInAs(alice)).toBe("bob");
  });

  it("saw no page errors and no CSP violations", () => {
    expect(problems).toEqual([]);
  });
});
