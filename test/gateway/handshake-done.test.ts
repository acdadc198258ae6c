// A transport may let go of what it kept for the authenticator once the hello is settled
// (`Connection.handshakeDone`, docs/PROTOCOL.md §18.5): the gateway calls it once, after the
// authenticator has read the context and the hello's answer went out, and never reads the context
// again. Through a transport of the test's own (gateway.accept) and through the ws adapter.
import { afterEach, describe, expect, it } from "vitest";
import { createGateway, type Connection, type ConnectionContext, type Gateway } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { Client, startGateway, type Harness } from "./harness.js";
import { until } from "../storage/sqljs-helpers.js";

let gateway: Gateway | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
  await h?.close();
  h = undefined;
});

/** A connection that records what it was sent and when `handshakeDone` came, in one list. */
function recordingConnection(context: ConnectionContext): { conn: Connection; log: string[] } {
  const log: string[] = [];
  const conn: Connection = {
    send: (text) => log.push(`frame ${JSON.parse(text).type}`),
    sendBinary: () => undefined,
    close: (code) => log.push(`close ${code}`),
    bufferedAmount: 0,
    get context() {
      log.push("context read");
      return context;
    },
    handshakeDone: () => log.push("handshakeDone"),
  };
  return { conn, log };
}

describe("handshakeDone", () => {
  it("handshake done - called once after the authenticator read the context and hello.ok went out; the context is not read again", async () => {
    const seen: Array<string | undefined> = [];
    gateway = createGateway({
      storage: memoryStorage(),
      runtime: demoRuntime({ delayMs: 0 }),
      authenticator: {
        authenticate: async ({ context }) => {
          seen.push(String(context.headers?.["x-tag"]));
          return { owner: "ann", user: null };
        },
      },
    });
    await gateway.start();
    const { conn, log } = recordingConnection({ remoteAddress: "10.0.0.1", headers: { "x-tag": "t1" } });
    const handle = gateway.accept(conn);
    handle.receiveText(JSON.stringify({ type: "hello", id: "h", payload: { token: "", device_id: "d1" } }));
    await until(() => log.includes("handshakeDone"), "the hello settled");
    expect(seen).toEqual(["t1"]);
    const done = log.indexOf("handshakeDone");
    expect(log.indexOf("frame hello.ok")).toBeLessThan(done);
    expect(log.lastIndexOf("context read")).toBeLessThan(done);

    handle.receiveText(JSON.stringify({ type: "ping", id: "p", payload: { ts: 1 } }));
    await until(() => log.includes("frame pong"), "the pong");
    handle.closed();
    expect(log.filter((line) => line === "handshakeDone")).toHaveLength(1);
    expect(log.slice(done).includes("context read")).toBe(false);
  });

  it("handshake done - over ws the authenticator still sees the upgrade's headers, and the connection works after the hello", async () => {
    const seen: string[] = [];
    h = await startGateway({
      authenticator: {
        authenticate: async ({ context }) => {
          seen.push(String(context.headers?.["x-tag"]));
          return { owner: "ann", user: null };
        },
      },
    });
    const client = await Client.connect(h.url, { token: "" }, { "x-tag": "from-upgrade" });
    expect(seen).toEqual(["from-upgrade"]);
    expect((await client.request("ping", { ts: 5 })).payload).toEqual({ ts: 5 });
  });
});
