// The Connection conformance suite (a transport), exported by "chat-gateway/testing".
import { afterEach, describe, expect, test } from "vitest";
import { createGateway, type Connection, type Gateway, type GatewayOptions } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { memoryMediaStore } from "chat-gateway/media/memory";
import type { ClientSocket } from "./client-socket.js";
import { Device } from "./device.js";
import { pullMedia, uploadMedia } from "./media-transfer.js";
import { sleep, until } from "./wait.js";

/** A transport serving one gateway: how a device connects, and how to stop serving. */
export interface TransportUnderTest {
  /** Open a device's socket to the gateway; resolves once it is open. */
  connect(): Promise<ClientSocket>;
  /** Stop serving (close the server); runs after the gateway closed. */
  close(): Promise<void>;
}

/**
 * Serves `gateway` with the transport under test: wrap each native socket in a
 * {@link Connection}, hand it to `gateway.accept()` and feed the returned handle what the socket
 * receives, as `chat-gateway/ws` does. Called once per test with a fresh, started gateway.
 */
export type TransportFactory = (gateway: Gateway) => TransportUnderTest | Promise<TransportUnderTest>;

const quiet = { info() {}, warn() {}, error() {} };

/** A gateway that records every Connection the transport hands it. */
function recording(gateway: Gateway, accepted: Connection[]): Gateway {
  return new Proxy(gateway, {
    get(target, key) {
      if (key === "accept") {
        return (connection: Connection) => {
          accepted.push(connection);
          return target.accept(connection);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link Connection}
 * contract for a transport, inside a `describe("connection conformance: <name>")` block. The
 * suite starts a gateway (memory storage and media, a runtime that echoes), lets the transport
 * serve it, and talks the protocol through the transport's device end:
 *
 * ```ts
 * import { describeConnectionConformance, webSocketClient } from "chat-gateway/testing";
 * describeConnectionConformance("my transport", async (gateway) => {
 *   const server = await serveMyTransport(gateway);
 *   return { connect: () => webSocketClient(server.url), close: () => server.close() };
 * });
 * ```
 *
 * What it checks (docs/PROTOCOL.md §2 and §8.2):
 * - handshake: `hello` is answered `hello.ok`, and the Connection the gateway got has a
 *   `context` and a numeric `bufferedAmount`; another first frame gets `error auth` and the device
 *   sees close 4401; no `hello` in time is close 4408; `min_protocol: 2` is close 4426;
 * - text: 50 `ping`s are answered by their `pong`s in order; a text frame over `max_frame_bytes`
 *   closes 1009;
 * - binary: an upload in binary chunks and its `media.pull` come through byte for byte, every
 *   chunk before `media.pull.end`;
 * - backpressure: `bufferedAmount` counts a large send still queued and falls back to 0 once the
 *   device has it;
 * - close: a device that disconnects frees its place (the handle's `closed()` was called) and
 *   the gateway emits `connect` and `disconnect` once each; and
 *   `gateway.close()` closes devices with 1001, after which the Connection takes `send`,
 *   `sendBinary` and `close` without throwing.
 *
 * @param name Shown in the test names, e.g. `"ws"`.
 * @param serve Serves a gateway with the transport; see {@link TransportFactory}.
 */
export function describeConnectionConformance(name: string, serve: TransportFactory): void {
  describe(`connection conformance: ${name}`, () => {
    const stops: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const stop of stops.splice(0).reverse()) await stop();
    });
    const start: Start = (options = {}) => startServed(serve, stops, options);
    describeHandshakeTests(start);
    describeTrafficTests(start);
    describeCloseTests(start);
  });
}

/** A started gateway served by the transport; `accepted` fills as devices connect. */
type Start = (
  options?: Partial<GatewayOptions>,
) => Promise<{ gateway: Gateway; accepted: Connection[]; connect: () => Promise<Device> }>;

/** Starts a gateway with `options`, serves it with the transport, and queues both stops. */
async function startServed(
  serve: TransportFactory,
  stops: Array<() => Promise<void>>,
  options: Partial<GatewayOptions>,
) {
  const gateway = createGateway({
    storage: memoryStorage(),
    mediaStore: memoryMediaStore(),
    runtime: {
      turn: async function* (input) {
        yield { type: "text", delta: `echo: ${input.message.text}` };
      },
    },
    logger: quiet,
    ...options,
  });
  await gateway.start();
  const accepted: Connection[] = [];
  const transport = await serve(recording(gateway, accepted));
  stops.push(() => transport.close());
  stops.push(() => gateway.close());
  const connect = async () => new Device(await transport.connect());
  return { gateway, accepted, connect };
}

function describeHandshakeTests(start: Start): void {
  test("handshake - hello is answered hello.ok; the Connection has a context and a buffer figure", async () => {
    const { accepted, connect } = await start();
    const device = await connect();
    const ok = await device.hello();
    expect(ok.payload).toMatchObject({ protocol: 1, cursor: 0 });
    expect(accepted).toHaveLength(1);
    expect(typeof accepted[0].context).toBe("object");
    expect(Number.isFinite(accepted[0].bufferedAmount) && accepted[0].bufferedAmount >= 0).toBe(true);
  });

  test("handshake - another first frame gets error auth and close 4401", async () => {
    const device = await (await start()).connect();
    const answer = await device.request("ping", { ts: 1 });
    expect(answer).toMatchObject({ type: "error", payload: { code: "auth" } });
    expect(await device.closed()).toBe(4401);
  });

  test("handshake - no hello in time closes 4408; min_protocol 2 closes 4426", async () => {
    const { connect } = await start({ helloTimeoutMs: 300 });
    const silent = await connect();
    expect(await silent.closed()).toBe(4408);
    expect(silent.of("error").map((f) => f.payload.code)).toEqual(["auth"]);
    const future = await connect();
    future.send("hello", { token: "", device_id: "d-future", caps: { min_protocol: 2 } }, "h1");
    expect(await future.closed()).toBe(4426);
  });
}

function describeTrafficTests(start: Start): void {
  test("text - 50 pings are answered by their pongs in order", async () => {
    const device = await (await start()).connect();
    await device.hello();
    for (let i = 0; i < 50; i++) device.send("ping", { ts: i }, `p${i}`);
    await device.waitFor((f) => f.id === "p49", "the 50th pong");
    const pongs = device.of("pong");
    expect(pongs.map((f) => f.id)).toEqual(Array.from({ length: 50 }, (_, i) => `p${i}`));
    expect(pongs.map((f) => f.payload.ts)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  test("text - a frame over max_frame_bytes closes 1009", async () => {
    const device = await (await start({ maxFrameBytes: 64 * 1024 })).connect();
    await device.hello();
    device.send("ping", { pad: "x".repeat(100 * 1024) });
    expect(await device.closed()).toBe(1009);
  });

  test("binary - an upload in chunks and its pull come through byte for byte, chunks before the end", async () => {
    const device = await (await start()).connect();
    await device.hello();
    const bytes = new Uint8Array(600 * 1024).map((_, i) => (i * 7919) % 251);
    await uploadMedia(device, "kit-upload", bytes);
    const pulled = await pullMedia(device, "kit-upload");
    expect(Buffer.compare(Buffer.from(pulled), Buffer.from(bytes))).toBe(0);
  });

  test("backpressure - bufferedAmount counts a large send still queued, then falls back to 0", async () => {
    const { accepted, connect } = await start();
    const device = await connect();
    await device.hello();
    const big = "y".repeat(8 * 1024 * 1024);
    accepted[0].send(big);
    expect(accepted[0].bufferedAmount, "bytes queued right after an 8 MiB send").toBeGreaterThan(0);
    await until(() => device.text.length === 1, "the device to receive the 8 MiB message", 10_000);
    await until(() => accepted[0].bufferedAmount === 0, "bufferedAmount to fall back to 0");
    expect(device.text[0].length).toBe(big.length);
  });
}

function describeCloseTests(start: Start): void {
  test("close - a device that disconnects frees its place", async () => {
    const { connect } = await start({ maxConnectionsPerOwner: 1 });
    const first = await connect();
    await first.hello();
    const second = await connect();
    expect(await second.request("hello", { token: "", device_id: "d2" })).toMatchObject({
      type: "error",
      payload: { code: "rate_limited" },
    });
    expect(await second.closed()).toBe(4429);
    first.socket.close();
    await first.closed();
    await until(async () => {
      const third = await connect();
      const answer = await third.request("hello", { token: "", device_id: "d3" });
      return answer.type === "hello.ok";
    }, "a new device to be admitted once the first left");
  });

  test("events - the gateway emits connect after hello and disconnect when the device leaves, once each", async () => {
    const { gateway, connect } = await start();
    const seen: string[] = [];
    gateway.on("connect", (info) => seen.push(`connect ${info.deviceId}`));
    gateway.on("disconnect", (info) => seen.push(`disconnect ${info.deviceId}`));
    const device = await connect();
    await device.hello({ device_id: "d-events" });
    await until(() => seen.length === 1, "the connect event");
    device.socket.close();
    await until(() => seen.length === 2, "the disconnect event");
    await sleep(100);
    expect(seen).toEqual(["connect d-events", "disconnect d-events"]);
  });

  test("close - gateway.close() closes devices with 1001; a closed Connection still takes calls", async () => {
    const { gateway, accepted, connect } = await start();
    const device = await connect();
    await device.hello();
    await gateway.close();
    expect(await device.closed()).toBe(1001);
    const connection = accepted[0];
    expect(() => {
      connection.send('{"type":"pong","payload":{}}');
      connection.sendBinary(Uint8Array.of(1, 2, 3));
      connection.close(1000);
      connection.close(1000);
    }).not.toThrow();
  });
}
