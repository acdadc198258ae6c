// Shedding before the upgrade (docs/PROTOCOL.md §18.5): once the hellos in progress and the
// sockets taken but not yet at their first frame reach maxHellosInFlight, the ws adapter answers a
// new upgrade HTTP 503 with the retry hint in `Retry-After-Ms` (and `Retry-After` in seconds),
// instead of upgrading a socket whose hello would wait behind the others. Real sockets on
// 127.0.0.1; the authenticator holds the hellos in progress until the test lets them go.
import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { AuthResult, Authenticator, UpgradeDecision } from "chat-gateway";
import WebSocket from "ws";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await h?.close();
  h = undefined;
});

/** Token "slow" waits until `release()`; any other token is let in at once. */
function heldAuthenticator(): { authenticator: Authenticator; release(): void; held(): number } {
  const waiting: Array<() => void> = [];
  const result: AuthResult = { owner: "ann", user: null };
  return {
    authenticator: {
      authenticate: ({ token }) =>
        token === "slow"
          ? new Promise<AuthResult>((resolve) => waiting.push(() => resolve(result)))
          : Promise.resolve(result),
    },
    release() {
      for (const go of waiting.splice(0)) go();
    },
    held: () => waiting.length,
  };
}

interface UpgradeAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A plain HTTP upgrade request: the status, headers and body of a refusal, or 101. */
function upgrade(url: string): Promise<UpgradeAnswer> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: hostname,
      port,
      path: pathname,
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": Buffer.from("0123456789abcdef").toString("base64"),
      },
    });
    request.on("upgrade", (response, socket) => {
      socket.destroy();
      resolve({ status: response.statusCode ?? 0, headers: response.headers, body: "" });
    });
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

/** Opens a socket and says hello with `token` (no wait for the answer). */
function hello(url: string, token: string, i: number): WebSocket {
  const ws = new WebSocket(url);
  sockets.push(ws);
  ws.on("open", () => ws.send(JSON.stringify({ type: "hello", id: `h${i}`, payload: { token, device_id: `d${i}` } })));
  ws.on("error", () => undefined);
  return ws;
}

/** Opens a socket that sends nothing, and resolves once it is open. */
async function idle(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url);
  sockets.push(ws);
  ws.on("error", () => undefined);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("unexpected-response", () => reject(new Error("the idle socket was refused")));
  });
  return ws;
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The hint of a 503 refusal, after checking that its headers and body agree. */
function hintOf(answer: UpgradeAnswer): number {
  expect(answer.status).toBe(503);
  const ms = Number(answer.headers["retry-after-ms"]);
  expect(ms).toBeGreaterThanOrEqual(200);
  expect(ms).toBeLessThanOrEqual(30_000);
  expect(answer.headers["retry-after"]).toBe(String(Math.ceil(ms / 1000)));
  expect(JSON.parse(answer.body)).toEqual({ error: `the server is busy; try again in ${ms} ms`, retry_after_ms: ms });
  return ms;
}

describe("shedding before the upgrade", () => {
  it("upgrade shedding - with maxHellosInFlight hellos in progress a new upgrade is answered 503 with a retry hint, and the connections in are still answered", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 3, authenticator: auth.authenticator });
    const inside = await Client.connect(h.url, { token: "fast" });
    for (let i = 0; i < 3; i++) hello(h.url, "slow", i);
    await until(() => auth.held() === 3, "three hellos in progress");

    const answers = await Promise.all(Array.from({ length: 6 }, () => upgrade(h!.url)));
    const hints = answers.map(hintOf);
    // Places in a virtual queue: the hints are not all the same.
    expect(new Set(hints).size).toBeGreaterThan(1);
    expect(h.gateway.stats().hellos).toMatchObject({ shed: 6, refused: 0 });
    expect((await inside.request("ping", { ts: 3 })).payload).toEqual({ ts: 3 });

    auth.release();
    await until(() => h!.gateway.stats().hellos.ok === 4, "the held hellos let in");
    expect((await upgrade(h.url)).status).toBe(101);
    expect((await Client.connect(h.url, { token: "fast" })).frames[0].type).toBe("hello.ok");
  });

  it("upgrade shedding - sockets taken but silent count for a second at most, so idle sockets cannot keep the door shut", async () => {
    h = await startGateway({ maxHellosInFlight: 2 });
    const first = await idle(h.url);
    await idle(h.url);
    // Two sockets on their way to a hello fill the two places.
    hintOf(await upgrade(h.url));
    // One of them sends its first frame: its place as a pending socket is free at once.
    first.send(JSON.stringify({ type: "hello", id: "h", payload: { token: "t", device_id: "first" } }));
    await until(() => h!.gateway.stats().hellos.ok === 1, "the first socket's hello");
    await idle(h.url);
    hintOf(await upgrade(h.url));
    // The two silent sockets stay open and silent: after a second they no longer count.
    const since = Date.now();
    await until(async () => (await upgrade(h!.url)).status === 101, "an upgrade taken beside the silent sockets");
    expect(Date.now() - since).toBeGreaterThanOrEqual(500);
    // The first socket and the two silent ones are still open (the upgrades above were let go).
    await until(() => h!.gateway.stats().connections === 3, "the probing upgrades closed");
  });

  it("upgrade shedding - upgrades that pass an asynchronous upgrade gate together are asked again after it: only the free places are taken", async () => {
    const gates: Array<() => void> = [];
    const authorizeUpgrade = () =>
      new Promise<UpgradeDecision>((resolve) => gates.push(() => resolve({ ok: true, context: {} })));
    h = await startGateway({ maxHellosInFlight: 2 }, { authorizeUpgrade });
    const answers = Array.from({ length: 5 }, () => upgrade(h!.url));
    await until(() => gates.length === 5, "five upgrades at the gate");
    for (const go of gates.splice(0)) go();
    const statuses = (await Promise.all(answers)).map((a) => a.status).sort();
    expect(statuses).toEqual([101, 101, 503, 503, 503]);
    expect(h.gateway.stats().hellos.shed).toBe(3);
  });

  it("upgrade shedding - shedBeforeUpgrade: false upgrades every socket and sheds at the hello with 1013", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator }, { shedBeforeUpgrade: false });
    hello(h.url, "slow", 0);
    await until(() => auth.held() === 1, "the hello in progress");
    const ws = hello(h.url, "fast", 1);
    const [code, reason] = await new Promise<[number, string]>((resolve) =>
      ws.on("close", (c, r) => resolve([c, String(r)])),
    );
    expect(code).toBe(1013);
    expect(reason).toMatch(/^retry_after_ms=\d+$/);
    expect(h.gateway.stats().hellos).toMatchObject({ shed: 0, refused: 1 });
    auth.release();
  });
});
