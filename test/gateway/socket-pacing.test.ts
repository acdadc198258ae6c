// A reconnect storm in slices (docs/PROTOCOL.md §18.5): the ws adapter lets at most a window of
// new sockets read their request at once, and the gateway upgrades at most a slice of the
// connections waiting for room per turn of the event loop, so no single turn holds the
// connections already in for the whole storm. Real sockets on 127.0.0.1; the turns are counted by
// a setImmediate loop in this process, which also runs the server.
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { Client, heldAuthenticator, startGateway, type Harness } from "./harness.js";
import { until } from "../storage/sqljs-helpers.js";

let h: Harness | undefined;
const sockets: Array<net.Socket | WebSocket> = [];
let spinning = false;
afterEach(async () => {
  spinning = false;
  for (const s of sockets.splice(0)) s instanceof WebSocket ? s.terminate() : s.destroy();
  await h?.close();
  h = undefined;
});

/** Counts turns of the event loop: `turn()` is the number of the turn running now. */
function turns(): () => number {
  let turn = 0;
  spinning = true;
  const spin = () => {
    turn++;
    if (spinning) setImmediate(spin);
  };
  spin();
  return () => turn;
}

/** The most events counted in one turn. */
function busiest(perTurn: Map<number, number>): number {
  return Math.max(...perTurn.values());
}

function count(perTurn: Map<number, number>, turn: number): void {
  perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
}

/** `n` raw sockets, connected and accepted by the server, that have sent nothing yet. */
async function connectedSockets(n: number): Promise<net.Socket[]> {
  const { port } = new URL(h!.url);
  let accepted = 0;
  const onConnection = () => void accepted++;
  h!.server.on("connection", onConnection);
  const opened = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect(Number(port), "127.0.0.1", () => resolve(socket));
          socket.on("error", reject);
          sockets.push(socket);
        }),
    ),
  );
  await until(() => accepted === n, `${n} sockets accepted`);
  h!.server.off("connection", onConnection);
  return opened;
}

/** Writes a WebSocket upgrade request on every socket in one go; resolves once each has its 101. */
function upgradeAll(all: net.Socket[]): Promise<void> {
  const key = Buffer.from("0123456789abcdef").toString("base64");
  const request = `GET /ws/gateway HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n\r\n`;
  const answered = all.map(
    (socket) =>
      new Promise<void>((resolve, reject) => {
        let head = "";
        socket.on("data", (chunk) => {
          head += chunk.toString("latin1");
          if (head.startsWith("HTTP/1.1 101")) resolve();
          else if (head.includes("\r\n\r\n")) reject(new Error(head.split("\r\n")[0]));
        });
      }),
  );
  for (const socket of all) socket.write(request);
  return Promise.all(answered).then(() => undefined);
}

describe("a storm in slices", () => {
  it("pacing - 96 requests that arrive at once are parsed at most 16 in a turn, and all are upgraded; unpaced they are parsed in one turn", async () => {
    for (const paced of [true, false]) {
      // Places that last a minute: on a loaded machine connecting 96 sockets can take longer than
      // the default 100 ms, and sockets whose places lapsed meanwhile would read unpaced.
      const pacing = paced ? { windowMs: 60_000 } : false;
      h = await startGateway({ maxConnectionsPerOwner: 200, maxConnectionsPerIp: 200 }, { paceSockets: pacing });
      const all = await connectedSockets(96);
      const turn = turns();
      const perTurn = new Map<number, number>();
      h.server.on("upgrade", () => count(perTurn, turn()));
      await upgradeAll(all);
      expect(perTurn.size > 0 && [...perTurn.values()].reduce((a, b) => a + b)).toBe(96);
      if (paced) expect(busiest(perTurn)).toBeLessThanOrEqual(16);
      // The control: the same requests unpaced all land in one turn, so the bound above is the pacer's.
      else expect(busiest(perTurn)).toBeGreaterThan(16);
      spinning = false;
      for (const s of sockets.splice(0)) s instanceof WebSocket ? s.terminate() : s.destroy();
      await h.close();
      h = undefined;
    }
  });

  it("pacing - sockets that connect and never send keep no one out: a device behind more than a window of them still gets in", async () => {
    h = await startGateway();
    await connectedSockets(40);
    const client = await Client.connect(h.url, { token: "t" });
    expect((await client.request("ping", { ts: 7 })).payload).toEqual({ ts: 7 });
  });

  it("pacing - however long silent sockets keep their places, none is held past maxHoldMs: a device behind them gets in", async () => {
    // A window of one whose place lasts a minute: without the bound on holding, the device would
    // wait for 6 silent sockets' places to lapse, one after the other (six minutes).
    h = await startGateway({}, { paceSockets: { window: 1, windowMs: 60_000, maxHoldMs: 300 } });
    await connectedSockets(6);
    const client = await Client.connect(h.url, { token: "t" });
    expect((await client.request("ping", { ts: 8 })).payload).toEqual({ ts: 8 });
  });

  it("pacing - a connection waiting for room keeps its place: past the gateway's room a window at most is parsed, the rest wait unread, and all get in once there is room", async () => {
    const auth = heldAuthenticator();
    const caps = { maxHellosInFlight: 1, maxConnectionsPerOwner: 50, maxConnectionsPerIp: 50 };
    h = await startGateway(
      { ...caps, authenticator: auth.authenticator },
      { paceSockets: { window: 4, windowMs: 60_000 } },
    );
    let upgrades = 0;
    h.server.on("upgrade", () => void upgrades++);
    const device = (token: string, i: number) => {
      const ws = new WebSocket(h!.url);
      sockets.push(ws);
      ws.on("open", () => ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token, device_id: `d${i}` } })));
      ws.on("error", () => undefined);
    };
    device("slow", 0);
    await until(() => auth.held() === 1, "the held hello");
    for (let i = 1; i <= 12; i++) device("fast", i);
    await until(() => h!.gateway.stats().connectionsWaiting === 4, "4 waiting for room");
    // The other 8 stay unread: their requests are in the kernel, not parsed and held in the process.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(upgrades).toBe(5);
    expect(h.gateway.stats().connectionsWaiting).toBe(4);
    auth.release();
    await until(() => h!.gateway.stats().hellos.ok === 13, "all 13 in");
    expect(upgrades).toBe(13);
  });

  it("admission - when many places free at once, the connections waiting for room are upgraded at most 8 in a turn, in arrival order, and all get in", async () => {
    const auth = heldAuthenticator();
    h = await startGateway({
      maxHellosInFlight: 48,
      maxConnectionsPerOwner: 200,
      maxConnectionsPerIp: 200,
      connectRateLimit: { perSecond: 1000, burst: 1000 },
      rateLimitPerAddress: { perSecond: 1000, burst: 1000 },
      authenticator: auth.authenticator,
    });
    const opened: number[] = [];
    const open = (token: string, i: number) => {
      const ws = new WebSocket(h!.url);
      sockets.push(ws);
      ws.on("open", () => {
        opened.push(i);
        ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token, device_id: `d${i}` } }));
      });
      ws.on("error", () => undefined);
      return ws;
    };
    for (let i = 0; i < 48; i++) open("slow", -1 - i);
    await until(() => auth.held() === 48, "48 hellos held");
    for (let i = 0; i < 48; i++) {
      open("fast", i);
      await until(() => h!.gateway.stats().connectionsWaiting === i + 1, `waiter ${i}`);
    }
    // The connections the gateway holds, sampled once a turn: each rise is what that turn upgraded.
    const rises: number[] = [];
    let last = h.gateway.stats().connections;
    spinning = true;
    const sample = () => {
      const now = h?.gateway.stats().connections ?? last;
      if (now > last) rises.push(now - last);
      last = now;
      if (spinning) setImmediate(sample);
    };
    sample();
    auth.release();
    await until(() => h!.gateway.stats().hellos.ok === 96, "all 96 in");
    expect(rises.reduce((a, b) => a + b, 0)).toBe(48);
    expect(Math.max(...rises)).toBeLessThanOrEqual(8);
    expect(rises.length).toBeGreaterThanOrEqual(6);
    expect(opened.filter((i) => i >= 0)).toEqual(Array.from({ length: 48 }, (_, i) => i));
  });
});
