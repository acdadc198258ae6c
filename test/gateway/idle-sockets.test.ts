// Idle sockets of one address delay no one else (docs/PROTOCOL.md §18.5): the ws adapter's pacer
// gives one client address at most `windowPerAddress` places of its window, its other new sockets
// waiting behind its own, and closes a socket past `maxSocketsPerAddress` open ones as it is
// accepted. Real TCP on 127.0.0.1; two loopback source addresses (127.0.0.2 the attacker, 127.0.0.3
// the others) are two clients. Places last a minute here, so a socket only gets ahead by the
// pacer letting it, never by another's place lapsing while the test runs.
import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { attachWebSocket } from "chat-gateway/ws";
import { startGateway, type Harness } from "./harness.js";
import { until } from "../storage/sqljs-helpers.js";

const ATTACKER = "127.0.0.2";
const VICTIM = "127.0.0.3";
const LONG = { windowMs: 60_000, maxHoldMs: 60_000 };

let h: Harness | undefined;
const sockets: Array<net.Socket | WebSocket> = [];
/** The raw sockets that closed, whichever end closed them. */
const closed = new Set<net.Socket>();
afterEach(async () => {
  for (const s of sockets.splice(0)) s instanceof WebSocket ? s.terminate() : s.destroy();
  closed.clear();
  await h?.close();
  h = undefined;
});

/** `n` raw sockets from `from`, each writing `request` (if any) once connected; resolves once the server saw all `n`. */
async function idleSockets(n: number, from: string, request?: string): Promise<net.Socket[]> {
  const port = Number(new URL(h!.url).port);
  let accepted = 0;
  const onConnection = () => void accepted++;
  h!.server.on("connection", onConnection);
  const opened = Array.from({ length: n }, () => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress: from });
    socket.on("error", () => undefined);
    socket.once("close", () => closed.add(socket));
    if (request !== undefined) socket.once("connect", () => socket.write(request));
    sockets.push(socket);
    return socket;
  });
  await until(() => accepted === n, `${n} sockets accepted`);
  h!.server.off("connection", onConnection);
  return opened;
}

/** The sockets the server holds open now. */
function connections(): Promise<number> {
  return new Promise((resolve, reject) =>
    h!.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}

/** A plain GET from `from`: its status. */
function get(path: string, from: string): Promise<number> {
  const { hostname, port } = new URL(h!.url);
  return new Promise((resolve, reject) => {
    const request = http.get({ host: hostname, port, path, localAddress: from, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on("error", reject);
  });
}

/** A device from `from` that says hello: the type of the answer. */
function hello(from: string): Promise<string> {
  const ws = new WebSocket(h!.url, { localAddress: from });
  sockets.push(ws);
  return new Promise((resolve, reject) => {
    ws.on("open", () => ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token: "", device_id: "d" } })));
    ws.on("message", (data) => resolve(JSON.parse(String(data)).type));
    ws.on("error", reject);
  });
}

describe("idle sockets of one address", () => {
  it("pacing - an address's silent sockets fill only its own places: another address's GET and hello are answered while the silent address's later requests wait unread", async () => {
    h = await startGateway({}, { paceSockets: LONG });
    const seen: string[] = [];
    h.server.on("request", (request: http.IncomingMessage) =>
      seen.push(`${request.socket.remoteAddress} ${request.url}`),
    );
    // More silent sockets than the whole window, then sockets whose requests wait behind them.
    await idleSockets(24, ATTACKER);
    await idleSockets(4, ATTACKER, "GET /attacker HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    expect(await get("/api/ready", VICTIM)).toBe(404);
    expect(await hello(VICTIM)).toBe("hello.ok");
    expect(await get("/after-hello", VICTIM)).toBe(404);
    // The victim went first and the attacker's own requests are still held behind its silent sockets.
    expect(seen).toEqual([`${VICTIM} /api/ready`, `${VICTIM} /after-hello`]);
  });

  it("pacing - a socket past maxSocketsPerAddress open ones is closed as it is accepted; other addresses connect, and the address may again once some close", async () => {
    const warnings: string[] = [];
    const logger = { info() {}, warn: (message: string) => void warnings.push(message), error() {} };
    h = await startGateway({ logger }, { paceSockets: { ...LONG, maxSocketsPerAddress: 12 } });
    const first = await idleSockets(12, ATTACKER);
    const over = await idleSockets(5, ATTACKER);
    await until(() => over.every((socket) => closed.has(socket)), "the 5 past the cap closed");
    expect(await get("/api/ready", VICTIM)).toBe(404);
    expect(await hello(VICTIM)).toBe("hello.ok");
    expect(first.some((socket) => closed.has(socket))).toBe(false);
    const before = await connections();
    for (const socket of first.slice(0, 2)) socket.destroy();
    await until(async () => (await connections()) === before - 2, "the server saw two of the first close");
    // Two closed: two more are let in, and the next one is over the cap again.
    const again = await idleSockets(2, ATTACKER);
    const third = await idleSockets(1, ATTACKER);
    await until(() => closed.has(third[0]!), "the one past the cap closed");
    expect(await get("/api/ready", VICTIM)).toBe(404);
    expect(again.some((socket) => closed.has(socket))).toBe(false);
    expect(first.slice(2).some((socket) => closed.has(socket))).toBe(false);
    // Said once, naming the address and the option: behind an unannounced proxy it is everyone.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`from ${ATTACKER}`);
    expect(warnings[0]).toContain("maxSocketsPerAddress");
  });

  it("pacing - a pacing bound that is not a positive number is refused at attachWebSocket with a TypeError", async () => {
    h = await startGateway();
    const { gateway } = h;
    const server = http.createServer();
    for (const paceSockets of [{ maxSocketsPerAddress: 0 }, { windowPerAddress: Number.NaN }, { window: Infinity }])
      expect(() => attachWebSocket(gateway, { server, paceSockets })).toThrow(TypeError);
    const unlimited = attachWebSocket(gateway, { server, paceSockets: { maxSocketsPerAddress: Infinity } });
    await unlimited.close();
  });
});
