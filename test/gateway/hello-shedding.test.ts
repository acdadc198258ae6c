// Shedding hellos (docs/PROTOCOL.md §18.5): past maxHellosInFlight a new connection's first frame
// is refused at once, rate_limited and close 1013 with `retry_after_ms=<n>`, and the connections
// already in keep being answered. Through real sockets; the authenticator holds the hellos in
// progress until the test lets them go, so which hellos are shed does not depend on timing. The ws
// adapter's queue before the upgrade is off here (`queueUpgrades: false`), so every socket
// reaches its hello; test/gateway/upgrade-shedding.test.ts tests the adapter's own.
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { Client, heldAuthenticator, startGateway, type Harness } from "./harness.js";
import { until } from "../storage/sqljs-helpers.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

interface Outcome {
  frames: Array<{ type: string; id?: string; payload: Record<string, any> }>;
  code: number;
  reason: string;
}

/** Opens a socket, says hello with `token`, and resolves with what came back once it closes. */
function helloUntilClosed(
  url: string,
  token: string,
  i: number,
): { ws: WebSocket; frames: Outcome["frames"]; outcome: Promise<Outcome> } {
  const ws = new WebSocket(url);
  const frames: Outcome["frames"] = [];
  ws.on("open", () =>
    ws.send(JSON.stringify({ type: "hello", id: `h${i}`, payload: { token, device_id: `flood-${i}` } })),
  );
  ws.on("message", (data) => frames.push(JSON.parse(String(data))));
  const outcome = new Promise<Outcome>((resolve) =>
    ws.on("close", (code, reason) => resolve({ frames, code, reason: String(reason) })),
  );
  ws.on("error", () => undefined);
  return { ws, frames, outcome };
}

describe("hello shedding", () => {
  it("shedding - past maxHellosInFlight a hello waits for a place, twice the cap of them; past that it gets rate_limited and 1013 with a retry hint; a ping on a connection already in is answered meanwhile", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 3, authenticator: auth.authenticator }, { queueUpgrades: false });
    const inside = await Client.connect(h.url, { token: "fast" });
    const held = Array.from({ length: 3 }, (_, i) => helloUntilClosed(h!.url, "slow", i));
    await until(() => auth.held() === 3, "three hellos in progress");
    const waiting = Array.from({ length: 6 }, (_, i) => helloUntilClosed(h!.url, "fast", 20 + i));
    await until(() => h!.gateway.stats().hellosWaiting === 6, "six hellos waiting for a place");

    const shed = await Promise.all(
      Array.from({ length: 6 }, (_, i) => helloUntilClosed(h!.url, "fast", 10 + i).outcome),
    );
    const hints: number[] = [];
    shed.forEach((s, i) => {
      expect(s.code).toBe(1013);
      expect(s.frames).toEqual([
        {
          type: "error",
          id: `h${10 + i}`,
          payload: { code: "rate_limited", message: expect.stringContaining("try again in") },
        },
      ]);
      const match = /^retry_after_ms=(\d+)$/.exec(s.reason);
      expect(match, s.reason).not.toBeNull();
      hints.push(Number(match![1]));
    });
    // Places in a virtual queue: each device shed later is told to come back no sooner.
    expect(hints.every((ms) => ms >= 200 && ms <= 30_000)).toBe(true);
    expect(new Set(hints).size).toBeGreaterThan(1);
    // The connection that is in keeps being answered while hellos are held, wait and are shed.
    expect((await inside.request("ping", { ts: 7 })).payload).toEqual({ ts: 7 });
    expect(h.gateway.stats().hellos).toMatchObject({ refused: 6 });
    expect(waiting.every((w) => w.frames.length === 0)).toBe(true);

    // Once the held hellos end, they are in, the waiting ones after them, and the places are free again.
    auth.release();
    const all = [...held, ...waiting];
    await until(
      () => all.every((x) => x.frames.some((f) => f.type === "hello.ok")),
      "the held and waiting hellos let in",
    );
    expect(h.gateway.stats().hellosWaiting).toBe(0);
    const next = await Client.connect(h.url, { token: "fast" });
    expect(next.frames[0].type).toBe("hello.ok");
    for (const { ws } of all) ws.close();
  });

  it("shedding - a hello waiting for a place holds the frames sent after it: once it has a place, hello.ok comes first, then their answers, in order", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator }, { queueUpgrades: false });
    helloUntilClosed(h.url, "slow", 0);
    await until(() => auth.held() === 1, "the hello in progress");
    const ws = new WebSocket(h.url);
    const frames: Array<{ type: string; id?: string }> = [];
    ws.on("message", (data) => frames.push(JSON.parse(String(data))));
    await new Promise((resolve) => ws.on("open", resolve));
    ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token: "fast", device_id: "pipelined" } }));
    ws.send(JSON.stringify({ type: "ping", id: "p1", payload: { ts: 1 } }));
    ws.send(JSON.stringify({ type: "channel.list", id: "c1", payload: {} }));
    await until(() => h!.gateway.stats().hellosWaiting === 1, "the hello waiting");
    expect(frames).toEqual([]);
    auth.release();
    await until(() => frames.length === 3, "three answers");
    expect(frames.map((f) => [f.type, f.id])).toEqual([
      ["hello.ok", "h"],
      ["pong", "p1"],
      ["channel.list", "c1"],
    ]);
    ws.close();
  });

  it("shedding - a hello longer than 16,384 characters does not wait for a place: it is shed with 1013 while a short one waits", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator }, { queueUpgrades: false });
    helloUntilClosed(h.url, "slow", 0);
    await until(() => auth.held() === 1, "the hello in progress");
    const long = await helloUntilClosed(h.url, `fast-${"x".repeat(16_400)}`, 1).outcome;
    expect(long.code).toBe(1013);
    expect(long.reason).toMatch(/^retry_after_ms=\d+$/);
    expect(h.gateway.stats().hellosWaiting).toBe(0);
    const short = helloUntilClosed(h.url, "fast", 2);
    await until(() => h!.gateway.stats().hellosWaiting === 1, "the short hello waiting");
    auth.release();
    await until(() => short.frames.some((f) => f.type === "hello.ok"), "the short hello let in");
    short.ws.close();
  });

  it("shedding - a hello that ends any way (refused, or its socket gone) gives its place back", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 1, authenticator: auth.authenticator }, { queueUpgrades: false });
    // A first frame that is no hello holds the place only until it is refused (4401).
    const bad = new Client(h.url);
    await bad.opened;
    bad.send("ping", {}, "p1");
    expect(await bad.closedPromise).toBe(4401);
    // A held hello whose socket goes away gives its place back too.
    const gone = helloUntilClosed(h.url, "slow", 1);
    await until(() => auth.held() === 1, "the hello in progress");
    // Two wait for its place (twice the cap); the third is shed.
    const waiting = [helloUntilClosed(h.url, "slow", 2), helloUntilClosed(h.url, "slow", 3)];
    await until(() => h!.gateway.stats().hellosWaiting === 2, "two hellos waiting");
    expect((await helloUntilClosed(h.url, "fast", 4).outcome).code).toBe(1013);
    // A waiting hello whose socket goes away leaves the queue; the place goes to the next one.
    waiting[0].ws.terminate();
    await waiting[0].outcome;
    await until(() => h!.gateway.stats().hellosWaiting === 1, "one hello waiting");
    gone.ws.terminate();
    await gone.outcome;
    await until(
      () => auth.held() === 2 && h!.gateway.stats().hellosWaiting === 0,
      "the last waiting hello in progress",
    );
    waiting[1].ws.terminate();
    await waiting[1].outcome;
    await until(() => h!.gateway.stats().connections === 0, "the held connections closed");
    expect((await Client.connect(h.url, { token: "fast" })).frames[0].type).toBe("hello.ok");
  });

  it("shedding - createGateway refuses a maxHellosInFlight or maxConnectionsWaiting that is not a whole positive number", async () => {
    await expect(startGateway({ maxHellosInFlight: 0 })).rejects.toThrow(TypeError);
    await expect(startGateway({ maxHellosInFlight: 2.5 })).rejects.toThrow(/maxHellosInFlight/);
    await expect(startGateway({ maxConnectionsWaiting: 0 })).rejects.toThrow(TypeError);
    await expect(startGateway({ maxConnectionsWaiting: 1.5 })).rejects.toThrow(/maxConnectionsWaiting/);
  });
});
