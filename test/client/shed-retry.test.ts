// A gateway that sheds a hello closes it 1013 with `retry_after_ms=<n>`, and the ws adapter refuses
// an upgrade that cannot wait for room with HTTP 503 and `Retry-After-Ms: <n>` (docs/PROTOCOL.md §18.5):
// the typed client (on `ws`) comes back after the hint plus a jitter of up to half of it, whatever
// its own backoff, and gets in once the gateway has room. Against a real gateway over real sockets.
import { afterEach, expect, it } from "vitest";
import { createGatewayClient, type GatewayClient, type StateInfo } from "chat-gateway/client";
import type { AuthResult, GatewayOptions } from "chat-gateway";
import type { WebSocketOptions } from "chat-gateway/ws";
import WebSocket from "ws";
import { startGateway, type Harness } from "../gateway/harness.js";
import { until } from "./helpers.js";

let h: Harness | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) c();
  await h?.close();
  h = undefined;
});

/** A gateway whose one place is held by the hello of "holder" (token "hold") until `release()`. */
async function heldGateway(
  options: Partial<GatewayOptions>,
  ws: WebSocketOptions = {},
): Promise<{ holder: GatewayClient; release: () => void }> {
  let release: (() => void) | undefined;
  const result: AuthResult = { owner: "ann", user: null };
  const authenticate = ({ token }: { token: string }) =>
    token === "hold"
      ? new Promise<AuthResult>((resolve) => (release = () => resolve(result)))
      : Promise.resolve(result);
  h = await startGateway({ maxHellosInFlight: 1, authenticator: { authenticate }, ...options }, ws);
  const holder = createGatewayClient({ url: h.url, deviceId: "holder", token: "hold", pingIntervalMs: 0 });
  cleanups.push(() => holder.close());
  void holder.connect().catch(() => undefined);
  await until(() => release, "the held hello at the authenticator");
  return { holder, release: () => release!() };
}

/**
 * A client with a 30 s backoff (only the hint can bring it back within the test) is shed: its
 * reconnect waits the hint plus at most half of it, and it gets in once `release` frees the place.
 */
async function expectHintedRetry(held: { holder: GatewayClient; release: () => void }, why: string): Promise<void> {
  const client = createGatewayClient({
    url: h!.url,
    deviceId: "shed",
    token: "go",
    pingIntervalMs: 0,
    reconnect: { initialDelayMs: 30_000, maxDelayMs: 30_000, jitter: 0 },
  });
  cleanups.push(() => client.close());
  const waits: StateInfo[] = [];
  client.on("state", (state, info) => state === "reconnecting" && waits.push(info));
  const connected = client.connect();
  const info = await until(() => waits[0], "the shed hello's reconnect");
  const hint = Number(/retry_after_ms=(\d+)/.exec(info.reason ?? "")?.[1]);
  expect(info.reason).toContain(why);
  expect(hint).toBeGreaterThanOrEqual(200);
  expect(info.retryInMs).toBeGreaterThanOrEqual(hint);
  expect(info.retryInMs).toBeLessThanOrEqual(hint * 1.5);

  held.release();
  await until(() => held.holder.state === "open", "the held client in");
  await connected;
  await client.ready();
  expect(client.state).toBe("open");
}

it("client - after 1013 with a retry hint it waits the hint plus a jitter, not its backoff, and gets in", async () => {
  const held = await heldGateway({}, { queueUpgrades: false });
  // Two hellos wait for the one place (twice the cap): the next is shed.
  for (let i = 0; i < 2; i++) {
    const waiting = createGatewayClient({ url: h!.url, deviceId: `w${i}`, token: "go", pingIntervalMs: 0 });
    cleanups.push(() => waiting.close());
    void waiting.connect().catch(() => undefined);
  }
  await until(() => h!.gateway.stats().hellosWaiting === 2 || undefined, "two hellos waiting");
  await expectHintedRetry(held, "1013");
});

it("client - after an upgrade refused with 503 and Retry-After-Ms (the gateway's queue full) it waits the hint plus a jitter, not its backoff, and gets in", async () => {
  const held = await heldGateway({ maxConnectionsPerOwner: 100, maxConnectionsPerIp: 200, maxConnectionsWaiting: 64 });
  // 64 upgrades wait for the one place (maxConnectionsWaiting): the next cannot wait.
  for (let i = 0; i < 64; i++) {
    const ws = new WebSocket(h!.url);
    ws.on("error", () => undefined);
    ws.on("open", () =>
      ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token: "go", device_id: `w${i}` } })),
    );
    cleanups.push(() => ws.terminate());
  }
  await until(() => h!.gateway.stats().connectionsWaiting === 64 || undefined, "64 upgrades waiting");
  await expectHintedRetry(held, "the server answered 503 to the upgrade");
  expect(h!.gateway.stats().hellos.shed).toBe(1);
});
