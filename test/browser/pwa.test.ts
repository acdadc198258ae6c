// The installable web UI and the pocket (docs/PROTOCOL.md §16), in Chromium against the example
// server. Chromium's own PushManager would subscribe at Google, which this machine cannot reach,
// so the page's `pushManager.subscribe` answers a subscription whose endpoint is a local fake push
// service (https on 127.0.0.1, test certificate) and whose keys the test holds: the gateway encrypts
// and posts there, the test decrypts what arrived and delivers it into the service worker through
// the DevTools protocol, as the push service would have.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import qrcode from "qrcode-generator";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createUserStore } from "chat-gateway/login";
import { startServer, type RunningServer } from "../../examples/server/server.js";
import { Client } from "../gateway/harness.js";
import { HASHES } from "../http/helpers.js";
import { fakePushService, subscriber, type FakePushService, type Subscriber } from "../push/fake-push-service.js";
import { launchChromium, launchProfile, missingChromium, poll, resultsDir, watchProblems } from "./browser.js";

let server: RunningServer;
let service: FakePushService;
let browser: Browser;
let dir: string;
let alice: BrowserContext;
let page: Page;
let phone: Subscriber;
const problems: string[] = [];

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  if (missingChromium) return;
  dir = await mkdtemp(path.join(tmpdir(), "cg-pwa-"));
  const usersFile = path.join(dir, "users.json");
  await createUserStore(usersFile).add("alice", HASHES["alice-password"]);
  service = await fakePushService();
  phone = subscriber(`${service.url}/push/alice-browser`);
  // Answers take a moment, so the asking socket has closed when one ends: nobody is connected, so it is pushed at once (§15).
  process.env.GATEWAY_DEMO_DELAY_MS = "100";
  server = await startServer(
    {
      port: 0,
      host: "127.0.0.1",
      dataDir: dir,
      usersFile,
      service: "gateway",
      memory: false,
      webPush: { agent: service.agent, endpointAllowed: () => true },
    },
    () => undefined,
  );
  browser = await launchChromium();
  alice = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  await alice.grantPermissions(["notifications"], { origin: server.url });
  // Stands in for Chromium's push service client (see the top of this file).
  await alice.addInitScript((subscription) => {
    const made: { key?: string; sub?: unknown } = {};
    (window as unknown as { madeSubscription: typeof made }).madeSubscription = made;
    const fake = {
      endpoint: subscription.endpoint,
      toJSON: () => ({ ...subscription, expirationTime: null }),
      unsubscribe: async () => true,
    };
    PushManager.prototype.subscribe = async (options?: PushSubscriptionOptionsInit) => {
      made.key = btoa(String.fromCharCode(...new Uint8Array(options!.applicationServerKey as ArrayBuffer)))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "");
      made.sub = subscription;
      return fake as unknown as PushSubscription;
    };
    PushManager.prototype.getSubscription = async () => (made.sub ? (fake as unknown as PushSubscription) : null);
  }, phone.subscription);
  page = await alice.newPage();
  watchProblems(page, problems);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await service?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function signIn(p: Page): Promise<void> {
  await p.goto(server.url);
  await p.locator("#signin-user").fill("alice");
  await p.locator("#signin-password").fill("alice-password");
  await p.getByRole("button", { name: "Sign in" }).click();
  await p.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
}

/** A bearer session for a device of the test itself. */
async function session(): Promise<string> {
  const res = await fetch(`${server.url}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "alice", password: "alice-password" }),
  });
  return ((await res.json()) as { token: string }).token;
}

describe.sequential("the installable web UI", { timeout: 60_000 }, () => {
  it("serves the manifest, PNG icons and the service worker with its headers; the worker registers and keeps the shell, never the API", async () => {
    const sw = await fetch(`${server.url}/sw.js`);
    expect(sw.headers.get("service-worker-allowed")).toBe("/");
    expect(sw.headers.get("cache-control")).toBe("no-cache");
    expect(sw.headers.get("content-type")).toMatch(/^text\/javascript/);
    const manifest = await fetch(`${server.url}/manifest.webmanifest`);
    expect(manifest.headers.get("content-type")).toBe("application/manifest+json");
    const icons = ((await manifest.json()) as { icons: Array<{ src: string; sizes: string }> }).icons.filter((i) =>
      i.src.endsWith(".png"),
    );
    expect(icons.map((i) => i.sizes)).toEqual(["192x192", "512x512"]);
    for (const icon of icons) {
      const png = Buffer.from(await (await fetch(`${server.url}${icon.src}`)).arrayBuffer());
      expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect(`${png.readUInt32BE(16)}x${png.readUInt32BE(20)}`).toBe(icon.sizes);
    }
    await signIn(page);
    expect(await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL)).toBe(
      `${server.url}/sw.js`,
    );
    // Shell files were cached on install; API answers are not, even after the app fetched them.
    await poll(() => page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
    await page.evaluate(() => fetch("/api/auth/status"));
    const cached = await page.evaluate(async () =>
      (
        await Promise.all(
          (
            await caches.keys()
          ).map(async (k) => (await (await caches.open(k)).keys()).map((r) => new URL(r.url).pathname)),
        )
      ).flat(),
    );
    expect(cached).toEqual(
      expect.arrayContaining(["/", "/app.js", "/styles.css", "/manifest.webmanifest", "/icon-192.png"]),
    );
    expect(cached.filter((p) => p.startsWith("/api/") || p.startsWith("/ws/"))).toEqual([]);
    // Offline, the app still starts from the cache (and says the server cannot be reached).
    await alice.setOffline(true);
    await page.reload();
    await page.getByText("The server cannot be reached").waitFor({ timeout: 15_000 });
    await alice.setOffline(false);
    await page.reload();
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
  });

  it("Settings turns on Web Push; an answer is pushed through the push service, shows as a notification, and clicking it opens the lane", async () => {
    await page.getByRole("button", { name: "Settings" }).click();
    await page.locator("#setting-push").check();
    await page.getByText("This browser gets a notification").waitFor();
    const vapid = (
      (await await page.evaluate(() => fetch("/api/push/vapid").then((r) => r.json()))) as { public_key: string }
    ).public_key;
    expect(
      await page.evaluate(() => (window as unknown as { madeSubscription: { key?: string } }).madeSubscription.key),
    ).toBe(vapid);
    await page.screenshot({ path: path.join(resultsDir, "pwa-settings-push.png") });
    await page.keyboard.press("Escape");

    // Another device makes a channel and asks there, then leaves: the answer ends with nobody connected.
    const token = await session();
    const other = await Client.connect(
      `${server.url.replace(/^http/, "ws")}/ws/gateway`,
      { token: "" },
      { authorization: `Bearer ${token}` },
    );
    const created = await other.request("channel.create", { name: "Deploys", kind: "channel" });
    const chatId = created.payload.chat_id as string;
    await page.getByRole("button", { name: "Deploys" }).waitFor();
    await page.close();
    await other.request("message.send", { chat_id: chatId, text: "Is the deploy done? Tell me when it is." });
    await other.close();

    await poll(() => service.requests.length).toBe(1);
    const [request] = service.requests;
    expect(request.path).toBe("/push/alice-browser");
    const payload = JSON.parse(phone.decrypt(request.body));
    expect(payload).toMatchObject({ kind: "message", title: "New answer", chat_id: chatId, thread_id: null });
    expect(payload.body).toContain("You said: Is the deploy done?");

    page = await alice.newPage();
    watchProblems(page, problems);
    await page.goto(server.url);
    await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
    await page.getByRole("button", { name: "Settings" }).waitFor();
    await poll(() => page.locator(".conv-title h1").textContent()).not.toContain("Deploys");
    const cdp = await alice.newCDPSession(page);
    const registrationId = new Promise<string>((resolve) =>
      cdp.on("ServiceWorker.workerRegistrationUpdated", (e) => {
        for (const r of e.registrations) if (!r.isDeleted) resolve(r.registrationId);
      }),
    );
    // Delivered once the page's worker is active: a push sent to a registration still activating
    // after the reload was once lost on a busy machine.
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined));
    await cdp.send("ServiceWorker.enable");
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin: server.url,
      registrationId: await registrationId,
      data: JSON.stringify(payload),
    });
    // Read through the page's registration: the context may still list the first page's stopped
    // worker beside the one that took the push.
    const shown = () =>
      page.evaluate(async () =>
        (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({
          title: n.title,
          body: n.body,
          data: n.data,
        })),
      );
    await poll(async () => (await shown()).length).toBe(1);
    expect((await shown())[0]).toEqual({
      title: "New answer",
      body: payload.body,
      data: { lane: { chat_id: chatId, thread_id: null } },
    });
    // What a click on it does (a headless browser has no notification to click), in the newest worker.
    const worker = alice.serviceWorkers().at(-1)!;
    await worker.evaluate(async () => {
      const scope = self as unknown as {
        registration: ServiceWorkerRegistration;
        openLane(lane: unknown): Promise<void>;
      };
      const [notification] = await scope.registration.getNotifications();
      notification.close();
      await scope.openLane(notification.data.lane);
    });
    await poll(() => page.locator(".conv-title h1").textContent()).toBe("Deploys");
    await poll(() => page.getByText("You said: Is the deploy done?").count()).toBeGreaterThan(0);
  });

  it("pairing a second browser profile from the QR code's URL asks to join alice, then signs it in without a password; revoking it signs it out at once", async () => {
    await page.getByRole("button", { name: "Settings" }).click();
    await page.getByRole("button", { name: "Pair a device" }).click();
    const url = (await page.locator(".pair-url").getAttribute("href"))!;
    const code = (await page.locator(".pair-code").textContent())!;
    expect(url).toBe(`${server.url}/?pair=${code}`);
    // The QR code on screen is the URL's: the same modules as the library makes of it here.
    const made = qrcode(0, "M");
    made.addData(url);
    made.make();
    const dark = await page.locator("svg.qr path").getAttribute("d");
    expect(dark!.match(/M/g)!.length).toBe(
      Array.from({ length: made.getModuleCount() ** 2 }, (_, i) =>
        made.isDark(Math.floor(i / made.getModuleCount()), i % made.getModuleCount()),
      ).filter(Boolean).length,
    );
    await page.screenshot({ path: path.join(resultsDir, "pwa-settings-pair.png") });

    const profile = await mkdtemp(path.join(tmpdir(), "cg-pwa-profile-"));
    const tablet = await launchProfile(profile);
    try {
      const tab = await tablet.newPage();
      watchProblems(tab, problems);
      await tab.goto(url);
      // The link asks first, naming the account (test/browser/pairing.test.ts covers the question).
      await tab.getByRole("dialog", { name: "Join alice on this browser?" }).waitFor({ timeout: 15_000 });
      await tab.getByRole("button", { name: "Join alice" }).click();
      await tab.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
      expect(await tab.locator("#signin-user").count()).toBe(0);
      expect(new URL(tab.url()).search).toBe(""); // the code is off the address bar
      await tab.screenshot({ path: path.join(resultsDir, "pwa-paired.png") });

      // Settings lists it; revoking it closes its socket with 4401 and it asks to sign in.
      await page.keyboard.press("Escape");
      await page.getByRole("button", { name: "Settings" }).click();
      const row = page.locator(".device", { hasText: "Web (" });
      await row.waitFor();
      await row.getByRole("button", { name: /Revoke/ }).click();
      await page.getByText("No paired devices.").waitFor();
      await tab.locator("#signin-user").waitFor({ timeout: 5_000 });
      await tab.screenshot({ path: path.join(resultsDir, "pwa-revoked.png") });
      expect(await tab.locator(".signin-notice").textContent()).toContain("session has ended");
    } finally {
      await tablet.close();
      await rm(profile, { recursive: true, force: true });
    }
  });

  it("saw no page errors and no CSP violations", () => {
    expect(problems).toEqual([]);
  });
});
