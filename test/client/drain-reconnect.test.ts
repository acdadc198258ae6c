// A drained server closes with 1012 (docs/PROTOCOL.md §18): the typed client reconnects at once,
// with a jitter of at most a second, whatever its backoff; after a 1001 it waits its backoff.
import net, { type AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import type { StateInfo } from "chat-gateway/client";
import type { RunningServer } from "../../examples/server/server.js";
import { recordingClient, startExample, tempDir, until } from "./helpers.js";

let servers: RunningServer[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const s of servers) await s.close();
  servers = [];
  for (const c of cleanups.splice(0)) await c();
});

/** A TCP balancer in front of the servers: new connections go to `target`, which the test moves. */
async function balancer(): Promise<{ port: number; target: { port: number } }> {
  const target = { port: 0 };
  const server = net.createServer((socket) => {
    const upstream = net.connect(target.port, "127.0.0.1");
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, target };
}

/** Connects a client with a 30 s backoff through a balancer; `close` ends the first server once the second one takes new connections. */
async function reconnectAfter(close: (server: RunningServer) => Promise<void>) {
  const [one, two] = [await tempDir(), await tempDir()];
  cleanups.push(one.cleanup, two.cleanup);
  // Each a process of its own; memory of the conversation is not what this test is about.
  const first = await startExample(one.dir);
  const second = await startExample(two.dir);
  servers.push(second);
  const front = await balancer();
  front.target.port = first.port;
  const { client } = recordingClient({
    url: `ws://127.0.0.1:${front.port}/ws/gateway`,
    deviceId: "drain-dev",
    reconnect: { initialDelayMs: 30_000, maxDelayMs: 30_000, jitter: 0 },
  });
  cleanups.push(() => client.close());
  const infos: StateInfo[] = [];
  client.on("state", (state, info) => state === "reconnecting" && infos.push(info));
  await client.connect();
  await client.ready();
  front.target.port = second.port;
  await close(first);
  const info = await until(() => infos[0], "reconnecting");
  return { client, info };
}

it("client - reconnects at once after 1012 (a drained server), here to the next server behind the balancer", async () => {
  const { client, info } = await reconnectAfter((server) => server.close({ drainMs: 0 }));
  expect(info.reason).toContain("1012");
  expect(info.retryInMs).toBeLessThanOrEqual(1_000);
  // Long before the 30 s backoff would have let it try.
  await until(() => client.state === "open", "open again on the second server", 10_000);
});

it("client - after 1001 (a plain shutdown) waits its backoff", async () => {
  const { info } = await reconnectAfter((server) => server.close());
  expect(info.reason).toContain("1001");
  expect(info.retryInMs).toBe(30_000);
});
