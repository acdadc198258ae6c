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
  it("shedding - past maxHellosInFlight a hello gets rate_limited and 1013 with a retry hint; a ping on a connection already in is answered meanwhile", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({ maxHellosInFlight: 3, authenticator: auth.authenticator }, { queueUpgrades: false });
    const inside = await Client.connect(h.url, { token: "fast" });
    const held = Array.from({ length: 3 }, (_, i) => helloUntilClosed(h!.url, "slow", i));
    await until(() => auth.held() === 3, "three hellos in progress");

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
    // The connection that is in keeps being answered while hellos are held and shed.
    expect((await inside.request("ping", { ts: 7 })).payload).toEqual({ ts: 7 });
    expect(h.gateway.stats().hellos).toMatchObject({ refused: 6 });

    // Once the held hellos end, they are in and their places are free again.
    auth.release();
    await until(() => held.every((x) => x.frames.some((f) => f.type === "hello.ok")), "the held hellos let in");
    const next = await Client.connect(h.url, { token: "fast" });
    expect(next.frames[0].type).toBe("hello.ok");
    for (const { ws } of held) ws.close();
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
    expect((await helloUntilClosed(h.url, "fast", 2).outcome).code).toBe(1013);
    gone.ws.terminate();
    await gone.outcome;
    await until(() => h!.gateway.stats().connections === 0, "the held connection closed");
    expect((await Client.connect(h.url, { token: "fast" })).frames[0].type).toBe("hello.ok");
  });

  it("shedding - createGateway refuses a maxHellosInFlight or maxConnectionsWaiting that is not a whole positive number", async () => {
    await expect(startGateway({ maxHellosInFlight: 0 })).rejects.toThrow(TypeError);
    await expect(startGateway({ maxHellosInFlight: 2.5 })).rejects.toThrow(/maxHellosInFlight/);
    await expect(startGateway({ maxConnectionsWaiting: 0 })).rejects.toThrow(TypeError);
    await expect(startGateway({ maxConnectionsWaiting: 1.5 })).rejects.toThrow(/maxConnectionsWaiting/);
  });
});
