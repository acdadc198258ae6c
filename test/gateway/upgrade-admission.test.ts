// Waiting for room before the upgrade (docs/PROTOCOL.md §18.5): once the hellos in progress and
// waiting reach maxHellosInFlight, or those waiting and the sockets taken but not yet at their
// first frame twice that, the ws adapter holds a new upgrade, in arrival order, until a place
// frees, and answers one that cannot wait (too many
// waiting, too many from its address, waiting too long, the gateway closing) HTTP 503 with the
// retry hint in `Retry-After-Ms` (and `Retry-After` in seconds). Real sockets on 127.0.0.1; the
// authenticator holds each "slow-…" hello until the test lets that one go.
import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { AuthResult, Authenticator } from "chat-gateway";
import WebSocket from "ws";
import { Client, startGateway, type Harness } from "./harness.js";
import { until } from "../storage/sqljs-helpers.js";
import { manualClock } from "chat-gateway/testing";

let h: Harness | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await h?.close();
  h = undefined;
});

/** A token starting "slow" waits until `release(token)`; any other is let in at once. */
function heldAuthenticator(): { authenticator: Authenticator; release(token: string): void; held(): string[] } {
  const waiting = new Map<string, () => void>();
  const result: AuthResult = { owner: "ann", user: null };
  return {
    authenticator: {
      authenticate: ({ token }) =>
        token.startsWith("slow")
          ? new Promise<AuthResult>((resolve) => waiting.set(token, () => resolve(result)))
          : Promise.resolve(result),
    },
    release(token) {
      waiting.get(token)?.();
      waiting.delete(token);
    },
    held: () => [...waiting.keys()],
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

interface Device {
  ws: WebSocket;
  opened: boolean;
  helloOk: boolean;
  refused: Promise<UpgradeAnswer>;
}

/** Opens a socket that says hello with `token` once it is open (`token` undefined: it stays silent). */
function device(url: string, token?: string): Device {
  const ws = new WebSocket(url);
  sockets.push(ws);
  const d: Device = { ws, opened: false, helloOk: false, refused: new Promise(() => undefined) };
  d.refused = new Promise((resolve) =>
    ws.once("unexpected-response", (_request, response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    }),
  );
  ws.on("open", () => {
    d.opened = true;
    if (token !== undefined)
      ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token, device_id: `d-${token}` } }));
  });
  ws.on("message", (data) => {
    if (JSON.parse(String(data)).type === "hello.ok") d.helloOk = true;
  });
  ws.on("error", () => undefined);
  return d;
}

const waiting = () => h!.gateway.stats().connectionsWaiting;

/** The hint of a 503 refusal, after checking that its headers and body agree. */
function hintOf(answer: UpgradeAnswer): number {
  expect(answer.status).toBe(503);
  const ms = Number(answer.headers["retry-after-ms"]);
  // The clamp of the hint (src/admission/tuning.ts): a value the gateway computes, not a time measured.
  expect(ms).toBeGreaterThanOrEqual(200);
  expect(ms).toBeLessThanOrEqual(30_000);
  expect(answer.headers["retry-after"]).toBe(String(Math.ceil(ms / 1000)));
  expect(JSON.parse(answer.body)).toEqual({ error: `the server is busy; try again in ${ms} ms`, retry_after_ms: ms });
  return ms;
}

describe("waiting for room before the upgrade", () => {
  it("admission - past maxHellosInFlight new upgrades wait and are taken in arrival order as places free, one a round trip ahead; the connections in are answered meanwhile", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator });
    const inside = await Client.connect(h.url, { token: "fast" });
    device(h.url, "slow-h");
    await until(() => auth.held().length === 1, "the held hello");
    const queued: Device[] = [];
    for (let i = 0; i < 3; i++) {
      queued.push(device(h.url, `slow-${i}`));
      await until(() => waiting() === i + 1, `waiter ${i} queued`);
    }
    expect((await inside.request("ping", { ts: 1 })).payload).toEqual({ ts: 1 });
    expect(queued.some((d) => d.opened)).toBe(false);

    auth.release("slow-h");
    // The place freed goes to the longest waiting, and the next is taken a round trip ahead: its
    // hello waits for the place (twice the cap may be on their way or waiting), the third stays held.
    await until(() => auth.held().includes("slow-0"), "waiter 0 at its hello");
    await until(() => h!.gateway.stats().hellosWaiting === 1, "waiter 1's hello waiting for the place");
    expect(auth.held()).toEqual(["slow-0"]);
    expect(waiting()).toBe(1);
    expect(queued[2].opened).toBe(false);
    auth.release("slow-0");
    await until(() => auth.held().includes("slow-1"), "waiter 1 at its hello");
    expect(auth.held()).toEqual(["slow-1"]);
    expect(h.gateway.stats().hellosWaiting).toBe(0);
    expect(waiting()).toBe(1);
    expect(queued[2].opened).toBe(false);
    auth.release("slow-1");
    await until(() => auth.held().includes("slow-2"), "waiter 2 at its hello");
    expect(waiting()).toBe(0);
    auth.release("slow-2");
    await until(() => queued.every((d) => d.helloOk), "every waiter in");
    expect(h.gateway.stats().hellos).toMatchObject({ shed: 0, refused: 0 });
  });

  it("admission - a flood of upgrades at once: maxHellosInFlight hellos are held, at most as many more taken with their hellos waiting for a place, the rest wait unupgraded, and all get in once the hellos end", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 4, maxConnectionsPerOwner: 64, authenticator: auth.authenticator });
    const flood = Array.from({ length: 40 }, (_, i) => device(h!.url, `slow-${i}`));
    const hellosWaiting = () => h!.gateway.stats().hellosWaiting;
    // Those taken before the first hellos came (on loopback, few) are on their way: their hellos wait.
    await until(() => auth.held().length === 4 && hellosWaiting() + waiting() === 36, "4 held, 36 waiting");
    expect(hellosWaiting()).toBeLessThanOrEqual(4);
    expect(flood.filter((d) => d.opened)).toHaveLength(4 + hellosWaiting());
    // Let every held hello go as it arrives: the waiters come in four at a time.
    await until(() => {
      for (const token of auth.held()) auth.release(token);
      return flood.every((d) => d.helloOk);
    }, "the whole flood in");
    expect(waiting()).toBe(0);
    expect(h.gateway.stats().hellos).toMatchObject({ ok: 40, shed: 0 });
  });

  it("admission - a connection that cannot wait is answered 503 with the hint: too many from its address, or too many waiting", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, maxConnectionsPerIp: 2, authenticator: auth.authenticator });
    device(h.url, "slow-h");
    await until(() => auth.held().length === 1, "the held hello");
    const first = device(h.url, "slow-0");
    device(h.url, "slow-1");
    await until(() => waiting() === 2, "two waiting from 127.0.0.1");
    hintOf(await upgrade(h.url));
    // Once a place frees, the address's waiters are taken (the second a round trip ahead, its
    // hello waiting for the place), and it may wait again.
    auth.release("slow-h");
    await until(() => first.opened && waiting() === 0, "the waiters taken");
    const third = device(h.url, "slow-2");
    device(h.url, "slow-3");
    await until(() => waiting() === 2, "new waiters in their place");
    hintOf(await upgrade(h.url));
    expect(h.gateway.stats().hellos.shed).toBe(2);
    await h.close();

    // maxConnectionsWaiting wait at most, from every address together, however few hellos may run.
    const most = { maxHellosInFlight: 1, maxConnectionsWaiting: 80, maxConnectionsPerIp: 1000 };
    h = await startGateway({ ...most, authenticator: auth.authenticator });
    device(h.url, "slow-x");
    await until(() => auth.held().includes("slow-x"), "the held hello");
    for (let i = 0; i < 80; i++) device(h.url);
    await until(() => waiting() === 80, "80 waiting");
    hintOf(await upgrade(h.url));
    expect(third.opened).toBe(false);
  });

  it("admission - a connection waits at most handshakeTimeoutMs, then is answered 503 with the hint; closing the gateway answers the rest so, and those that come after", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator }, { handshakeTimeoutMs: 2_000 });
    device(h.url, "slow-h");
    await until(() => auth.held().length === 1, "the held hello");
    const since = Date.now();
    const late = device(h.url, "slow-late");
    hintOf(await late.refused);
    expect(Date.now() - since).toBeGreaterThanOrEqual(1_500);
    expect(late.opened).toBe(false);

    const left = device(h.url, "slow-left");
    await until(() => waiting() === 1, "a waiter");
    await h.gateway.close();
    hintOf(await left.refused);
    // One that comes while the transport still listens is refused so too, never held.
    let held = false;
    const probe = setInterval(() => (held ||= waiting() > 0), 5);
    hintOf(await upgrade(h.url));
    clearInterval(probe);
    expect(held).toBe(false);
    expect(h.gateway.stats().hellos.shed).toBe(3);
  }, 20_000);

  it("admission - sockets taken but silent count for two seconds at most, so idle sockets cannot keep others waiting", async () => {
    h = await startGateway({ maxHellosInFlight: 2 });
    const first = device(h.url);
    for (let i = 0; i < 3; i++) device(h.url);
    await until(() => h!.gateway.stats().connections === 4, "four silent sockets taken");
    // Sockets on their way to a hello may be twice the places: a fifth waits.
    const fifth = device(h.url, "t5");
    await until(() => waiting() === 1, "the fifth waiting");
    // One of the first sends its hello: it is no longer on its way, and the waiter is taken at once.
    first.ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token: "t", device_id: "first" } }));
    await until(() => fifth.helloOk, "the fifth in");
    await h.close();

    // Two silent sockets fill the one place's allowance: the next waits, and is taken once the
    // silent ones stop counting, while they are still open and silent.
    const clock = manualClock();
    h = await startGateway({ maxHellosInFlight: 1, clock });
    device(h.url);
    device(h.url);
    await until(() => h!.gateway.stats().connections === 2, "the silent sockets taken");
    const fourth = device(h.url, "t4");
    await until(() => waiting() === 1, "the fourth waiting");
    clock.advance(1_000);
    // The queue lets waiters in on the loop's next turn (setImmediate): two turns on, it has not.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(waiting()).toBe(1);
    clock.advance(1_500);
    await until(() => fourth.helloOk, "the fourth in beside the silent socket");
    expect(h.gateway.stats().hellos.shed).toBe(0);
  });

  it("admission - a transport whose take throws while the queue lets waiters go loses only that connection; it is logged, and the next is taken", async () => {
    const auth = heldAuthenticator();
    const errors: unknown[] = [];
    const logger = { info() {}, warn() {}, error: (_message: string, detail?: unknown) => errors.push(detail) };
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator, logger });
    device(h.url, "slow-h");
    await until(() => auth.held().length === 1, "the held hello");
    h.gateway.admitConnection({
      take() {
        throw new Error("a broken transport");
      },
      refuse() {},
    });
    const next = device(h.url, "fast");
    await until(() => waiting() === 2, "two waiting");
    auth.release("slow-h");
    await until(() => next.helloOk, "the next waiter in");
    expect(errors).toEqual([expect.objectContaining({ message: "a broken transport" })]);
    expect(waiting()).toBe(0);
  });

  it("admission - a transport whose refuse throws while the gateway closes loses only that connection; it is logged, the other waiters are answered 503 and close() resolves", async () => {
    const auth = heldAuthenticator();
    const errors: unknown[] = [];
    const logger = { info() {}, warn() {}, error: (_message: string, detail?: unknown) => errors.push(detail) };
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator, logger });
    device(h.url, "slow-h");
    await until(() => auth.held().length === 1, "the held hello");
    h.gateway.admitConnection({
      take() {},
      refuse() {
        throw new Error("a broken transport");
      },
    });
    const behind = upgrade(h.url);
    await until(() => waiting() === 2, "two waiting");
    await h.gateway.close();
    expect((await behind).status).toBe(503);
    expect(errors).toEqual([expect.objectContaining({ message: "a broken transport" })]);
    expect(waiting()).toBe(0);
  });

  it("admission - queueUpgrades: false upgrades every socket and sheds at the hello with 1013 past those waiting for a place", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator }, { queueUpgrades: false });
    device(h.url, "slow-h");
    await until(() => auth.held().length === 1, "the hello in progress");
    device(h.url, "slow-1");
    device(h.url, "slow-2");
    await until(() => h!.gateway.stats().hellosWaiting === 2, "two hellos waiting for the place");
    const shed = device(h.url, "fast");
    const [code, reason] = await new Promise<[number, string]>((resolve) =>
      shed.ws.on("close", (c, r) => resolve([c, String(r)])),
    );
    expect(code).toBe(1013);
    expect(reason).toMatch(/^retry_after_ms=\d+$/);
    expect(h.gateway.stats()).toMatchObject({ connectionsWaiting: 0, hellos: { shed: 0, refused: 1 } });
  });
});
