// The service worker's side of deciding from the lock screen (docs/PROTOCOL.md §21), in Chromium:
// a Web Push delivered into the worker through the DevTools protocol, as a push service would,
// shows its declarative notification with the ask's action buttons; a button posts its token as
// JSON to the ask's act path (answered here by the test's own HTTP server in front of the example
// server, which records what arrived) and the
// notification closes, or says why not; a clearing push replaces it. The payloads are built by the
// contract of §21 (the Web Push sender exports no payload function to build them with).
import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import type { Browser, BrowserContext, CDPSession, Page, Worker } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { launchChromium, missingChromium, poll, watchProblems } from "./browser.js";

let server: RunningServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let worker: Worker;
let cdp: CDPSession;
let registrationId: string;
let cleanup: (() => Promise<void>) | undefined;
const problems: string[] = [];

/** What the ask's act endpoint received, and the statuses it answers with, in order. */
interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}
const received: Received[] = [];
const statuses: number[] = [];
let front: Server;
let frontUrl: string;

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

/**
 * The page's origin: the example server, except `POST /api/asks/{picker_id}/act`, which this test
 * answers itself and records (the gateway's own route is another part's; the worker posts to its
 * own origin, as the page's CSP allows only that).
 */
async function startFront(target: RunningServer): Promise<void> {
  front = createServer((req, res) => {
    if (req.method === "POST" && /^\/api\/asks\/[^/]+\/act/.test(req.url ?? "")) {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
        const status = statuses.shift() ?? 500;
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ status }));
      });
      return;
    }
    const upstream = request(
      { host: "127.0.0.1", port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  // The gateway socket goes through as bytes.
  front.on("upgrade", (req, socket, head) => {
    const upstream = connect(target.port, "127.0.0.1", () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    const end = () => {
      upstream.destroy();
      socket.destroy();
    };
    upstream.on("error", end);
    socket.on("error", end);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  if (missingChromium) return;
  const temp = await tempDir();
  cleanup = temp.cleanup;
  server = await startExample(temp.dir);
  await startFront(server);
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  await context.grantPermissions(["notifications"], { origin: frontUrl });
  page = await context.newPage();
  watchProblems(page, problems);
  cdp = await context.newCDPSession(page);
  const registered = new Promise<string>((resolve) =>
    cdp.on("ServiceWorker.workerRegistrationUpdated", (e) => {
      for (const r of e.registrations) if (!r.isDeleted) resolve(r.registrationId);
    }),
  );
  await cdp.send("ServiceWorker.enable");
  await page.goto(frontUrl);
  await page.locator('.conn[data-state="open"]').waitFor({ timeout: 20_000 });
  await page.evaluate(() => navigator.serviceWorker.ready);
  registrationId = await registered;
  worker = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker"));
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  front?.closeAllConnections();
  await new Promise((resolve) => front?.close(resolve));
  await cleanup?.();
});

/** An ask's push as the gateway's Web Push sender makes it (docs/PROTOCOL.md §21). */
function askPush(pickerId: string, tokens: { approve: string; deny: string }, url = frontUrl) {
  return {
    kind: "notification",
    title: "Approve: deploy",
    body: "Run deploy.sh on production?",
    chat_id: "default",
    thread_id: null,
    picker_id: pickerId,
    notification_kind: "approval",
    web_push: 8030,
    notification: {
      title: "Approve: deploy",
      body: "Run deploy.sh on production?",
      navigate: "/?chat=default",
      tag: pickerId,
    },
    actions: [
      { option_id: "approve", title: "Approve", token: tokens.approve, url: `${url}/api/asks/${pickerId}/act` },
      { option_id: "deny", title: "Deny", token: tokens.deny, url: `${url}/api/asks/${pickerId}/act` },
    ],
  };
}

async function deliver(payload: unknown): Promise<void> {
  await cdp.send("ServiceWorker.deliverPushMessage", {
    origin: server.url,
    registrationId,
    data: JSON.stringify(payload),
  });
}

type Shown = { title: string; body: string; tag: string; actions: Array<{ action: string; title: string }> };

function shown(): Promise<Shown[]> {
  return worker.evaluate(async () =>
    (await (self as unknown as { registration: ServiceWorkerRegistration }).registration.getNotifications()).map(
      (n) => ({
        title: n.title,
        body: n.body,
        tag: n.tag,
        actions: ((n as unknown as { actions: Array<{ action: string; title: string }> }).actions ?? []).map((a) => ({
          action: a.action,
          title: a.title,
        })),
      }),
    ),
  );
}

/** What a click on `action` of the notification tagged `tag` does (a headless browser cannot click one). */
function click(tag: string, action: string): Promise<void> {
  return worker.evaluate(
    async ([tag, action]) => {
      const scope = self as unknown as {
        registration: ServiceWorkerRegistration;
        clicked(n: Notification, action: string): Promise<void>;
      };
      const [notification] = await scope.registration.getNotifications({ tag });
      await scope.clicked(notification, action);
    },
    [tag, action] as const,
  );
}

async function closeAll(): Promise<void> {
  await worker.evaluate(async () => {
    const scope = self as unknown as { registration: ServiceWorkerRegistration };
    for (const n of await scope.registration.getNotifications()) n.close();
  });
  await poll(async () => (await shown()).length).toBe(0);
}

describe.sequential("the service worker's action buttons", { timeout: 60_000 }, () => {
  it("shows an ask's push with its buttons under the ask's tag; a button posts its token as JSON, once, and the notification closes", async () => {
    await deliver(askPush("pk-one", { approve: "tok-approve-1", deny: "tok-deny-1" }));
    await poll(async () => (await shown()).length).toBe(1);
    expect((await shown())[0]).toEqual({
      title: "Approve: deploy",
      body: "Run deploy.sh on production?",
      tag: "pk-one",
      actions: [
        { action: "approve", title: "Approve" },
        { action: "deny", title: "Deny" },
      ],
    });

    statuses.push(200);
    await click("pk-one", "approve");
    expect(received).toHaveLength(1);
    const [post] = received;
    expect(post.method).toBe("POST");
    expect(post.url).toBe("/api/asks/pk-one/act");
    expect(post.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(post.body)).toEqual({ token: "tok-approve-1" });
    expect(post.headers.cookie).toBeUndefined();
    await poll(async () => (await shown()).length).toBe(0);
  });

  it("a button whose ask was answered elsewhere (410) replaces the notification, without buttons, saying so", async () => {
    await deliver(askPush("pk-two", { approve: "tok-approve-2", deny: "tok-deny-2" }));
    await poll(async () => (await shown()).length).toBe(1);
    statuses.push(410);
    await click("pk-two", "deny");
    expect(received.map((r) => JSON.parse(r.body).token)).toEqual(["tok-approve-1", "tok-deny-2"]);
    await poll(async () => (await shown())[0]?.body).toBe("Already answered elsewhere, or no longer open.");
    expect(await shown()).toEqual([
      { title: "Approve: deploy", body: "Already answered elsewhere, or no longer open.", tag: "pk-two", actions: [] },
    ]);
    await closeAll();
  });

  it("a clearing push replaces the notification with the same tag", async () => {
    await deliver(askPush("pk-three", { approve: "tok-approve-3", deny: "tok-deny-3" }));
    await poll(async () => (await shown()).length).toBe(1);
    await deliver({
      kind: "notification",
      title: "Approve: deploy",
      body: "Approved on Pixel",
      picker_id: "pk-three",
      web_push: 8030,
      notification: {
        title: "Approve: deploy",
        body: "Approved on Pixel",
        navigate: "/?chat=default",
        tag: "pk-three",
      },
      clear: true,
    });
    await poll(async () => (await shown())[0]?.body).toBe("Approved on Pixel");
    expect(await shown()).toEqual([
      { title: "Approve: deploy", body: "Approved on Pixel", tag: "pk-three", actions: [] },
    ]);
    expect(received).toHaveLength(2);
    await closeAll();
  });

  it("a button posts to its own origin whatever host the URL names; one with a query or another path is not shown", async () => {
    const push = askPush("pk-four", { approve: "tok-approve-4", deny: "tok-deny-4" }, "https://gateway.example");
    push.actions.push({
      ...push.actions[1],
      option_id: "later",
      url: `${frontUrl}/api/asks/pk-four/act?token=tok-deny-4`,
    });
    push.actions.push({ ...push.actions[1], option_id: "elsewhere", url: `${frontUrl}/api/other` });
    await deliver(push);
    await poll(async () => (await shown()).length).toBe(1);
    expect((await shown())[0].actions.map((a) => a.action)).toEqual(["approve", "deny"]);
    statuses.push(200);
    await click("pk-four", "approve");
    expect(received.map((r) => r.url)).toEqual([
      "/api/asks/pk-one/act",
      "/api/asks/pk-two/act",
      "/api/asks/pk-four/act",
    ]);
    expect(JSON.parse(received[2].body)).toEqual({ token: "tok-approve-4" });
    await poll(async () => (await shown()).length).toBe(0);
  });

  it("saw no page errors and no CSP violations", () => {
    expect(problems).toEqual([]);
  });
});
