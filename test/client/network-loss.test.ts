// A network that goes silent under an open socket (docs/PROTOCOL.md §21): the client notices by
// missed pings and says so, a send made meanwhile is stored once when the network is back, and
// `reconnectNow` starts the backoff over. The network is a relay that stops answering
// (test/fixtures/pausable-link.ts), not a closed server: nothing tells the client but silence.
import { expect, it } from "vitest";
import type { StateInfo } from "chat-gateway/client";
import { pausableLink } from "../fixtures/pausable-link.js";
import { cleanupAfterEach, exampleServer, testClient, until } from "./helpers.js";

const cleanups = cleanupAfterEach();

async function linkedServer() {
  const server = await exampleServer(cleanups);
  const link = await pausableLink({ host: "127.0.0.1", port: server.port });
  cleanups.push(() => link.close());
  return { server, link, url: `ws://127.0.0.1:${link.port}/ws/gateway` };
}

it("client - a silent network is noticed by two missed pings; a send made meanwhile is stored once when it is back", async () => {
  const { link, url } = await linkedServer();
  const { client, frames } = testClient(cleanups, url, { pingIntervalMs: 200 });
  const states: string[] = [];
  client.on("state", (state, info) => states.push(`${state}${info.reason ? `: ${info.reason}` : ""}`));
  await client.connect();
  await client.ready();

  link.pause();
  await until(() => client.state === "reconnecting", "reconnecting after the pings went unanswered", 15_000);
  expect(states.at(-1)).toBe("reconnecting: closed with 4000 (no pong)");
  const sent = client.sendMessage({ chat_id: "default", text: "sent into the silence" }, { timeoutMs: 60_000 });
  link.resume();
  const echo = await sent;
  expect(echo.text).toBe("sent into the silence");
  await until(() => client.state === "open", "open again", 15_000);
  // Once: the retried send came back as the same message, and history holds it once.
  const history = await client.request("history", { chat_id: "default", limit: 50 });
  expect(history.messages.filter((m) => m.text === "sent into the silence")).toHaveLength(1);
  expect(frames.filter((f) => f.type === "message" && f.payload.message_id === echo.message_id).length).toBeLessThan(2);
}, 60_000);

it("client - networkLost gives the socket up at once; reconnectNow starts the backoff over", async () => {
  const { link, url } = await linkedServer();
  // Delays of 100, 1,000, 10,000 ms without jitter: the value tells which attempt a wait is for.
  const { client } = testClient(cleanups, url, {
    pingIntervalMs: 0,
    reconnect: { initialDelayMs: 100, factor: 10, maxDelayMs: 1_000_000, jitter: 0 },
  });
  const waits: Array<StateInfo> = [];
  client.on("state", (state, info) => state === "reconnecting" && waits.push(info));
  await client.connect();
  await client.ready();

  link.pause("reset");
  client.networkLost();
  expect(client.state).toBe("reconnecting");
  expect(waits[0]).toMatchObject({ retryInMs: 100, reason: "closed with 4000 (the network is offline)" });
  // Attempts are refused: after two more the wait has grown to 10 s.
  await until(() => waits.length >= 3, "two more attempts", 30_000);
  expect(waits.slice(0, 3).map((w) => w.retryInMs)).toEqual([100, 1_000, 10_000]);

  link.resume();
  client.reconnectNow();
  await until(() => client.state === "open", "open at once after reconnectNow", 15_000);
  // The next drop waits the first delay again, not the grown one.
  const before = waits.length;
  link.pause();
  client.networkLost();
  expect(waits[before]?.retryInMs).toBe(100);
}, 60_000);
