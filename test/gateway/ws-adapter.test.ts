import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createGateway, type Gateway } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { attachWebSocket, listenWebSocket, type ListeningTransport } from "chat-gateway/ws";
import { Client, startGateway, type Harness } from "./harness.js";
import { sleep } from "./runtimes.js";

let h: Harness | undefined;
let gateway: Gateway | undefined;
let own: ListeningTransport | undefined;
afterEach(async () => {
  await h?.close();
  await own?.close();
  await gateway?.close();
  h = undefined;
  own = undefined;
  gateway = undefined;
});

describe("ws adapter", () => {
  it("ws - listens on a port of its own and answers other HTTP requests 404", async () => {
    gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime({ delayMs: 0 }) });
    await gateway.start();
    own = await listenWebSocket(gateway, { port: 0 });
    expect(own.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/ws\/gateway$/);
    const c = await Client.connect(own.url);
    expect((await c.say({ chat_id: "default", text: "own port" })).final.payload.final_text).toBe("You said: own port");
    const res = await fetch(own.url.replace("ws://", "http://").replace("/ws/gateway", "/elsewhere"));
    expect(res.status).toBe(404);
  });

  it("ws - leaves other upgrade paths to other listeners on the same server", async () => {
    h = await startGateway();
    const other = new WebSocket(h.url.replace("/ws/gateway", "/ws/other"));
    let otherUpgrade = false;
    h.server.on("upgrade", (req, socket) => {
      if (req.url === "/ws/other") {
        otherUpgrade = true;
        socket.destroy();
      }
    });
    await new Promise((r) => other.once("error", r));
    expect(otherUpgrade).toBe(true);
  });

  it("ws - an upgrade gate refusal answers its HTTP status and never upgrades", async () => {
    h = await startGateway({}, { authorizeUpgrade: () => ({ ok: false, status: 401, message: "sign in first" }) });
    const ws = new WebSocket(h.url);
    const status = await new Promise<number>((resolve) =>
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode!)),
    );
    expect(status).toBe(401);
  });

  it("ws - the heartbeat terminates a socket that stops answering pings", async () => {
    h = await startGateway({}, { heartbeatMs: 100 });
    const c = await Client.connect(h.url);
    // A peer that no longer answers pings: stop the client's automatic pong.
    (c.ws as any)._receiver.removeAllListeners("ping");
    (c.ws as any).pong = () => undefined;
    // Closed, whatever the code: a socket left open would fail the test at its timeout.
    await c.closedPromise;
    const alive = await Client.connect(h.url);
    await sleep(350);
    expect(alive.closeCode).toBeUndefined();
  });

  it("ws - an upgrade to a path nobody serves is answered 404 and its socket closed by the server", async () => {
    h = await startGateway();
    const port = (h.server.address() as AddressInfo).port;
    // rawHttp returns once the server closed the socket.
    const { text } = await rawHttp(port, upgradeRequest("/ws/other"));
    expect(text).toMatch(/^HTTP\/1\.1 404 /);
    // The gateway's own path still upgrades.
    expect((await (await Client.connect(h.url)).request("ping", {})).type).toBe("pong");
  });

  it("ws - the upgrade gate comes before the 404 of an unknown path", async () => {
    h = await startGateway({}, { authorizeUpgrade: () => ({ ok: false, status: 401, message: "sign in first" }) });
    const port = (h.server.address() as AddressInfo).port;
    const { text } = await rawHttp(port, upgradeRequest("/ws/other"));
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
  });

  it("ws - an upgrade whose gate does not decide in time is answered 503 and closed", async () => {
    h = await startGateway({}, { handshakeTimeoutMs: 200, authorizeUpgrade: () => new Promise(() => undefined) });
    const port = (h.server.address() as AddressInfo).port;
    const { text } = await rawHttp(port, upgradeRequest("/ws/gateway"));
    expect(text).toMatch(/^HTTP\/1\.1 503 /);
  });

  it("ws - with a port of its own, a socket that sends nothing or only part of an upgrade is closed after the handshake timeout", async () => {
    gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime({ delayMs: 0 }) });
    await gateway.start();
    own = await listenWebSocket(gateway, { port: 0, handshakeTimeoutMs: 300 });
    const silent = await rawHttp(own.port, "");
    const partial = await rawHttp(own.port, "GET /ws/gateway HTTP/1.1\r\nHost: x\r\n");
    for (const r of [silent, partial]) {
      // Closed by the server's request timeout (408), and not before it: Node's own default (60 s)
      // outlasts the test's timeout, so only handshakeTimeoutMs can have closed it.
      expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
      expect(r.ms).toBeGreaterThanOrEqual(250);
    }
    expect((await (await Client.connect(own.url)).request("ping", {})).type).toBe("pong");
  });

  it("ws - pongs the server did not ask for do not keep a socket alive", async () => {
    h = await startGateway({}, { heartbeatMs: 100, pongTimeoutMs: 100 });
    const c = await Client.connect(h.url);
    (c.ws as any)._receiver.removeAllListeners("ping");
    (c.ws as any).pong = () => undefined;
    const unsolicited = setInterval(() => WebSocket.prototype.pong.call(c.ws, Buffer.from("alive")), 10);
    const code = await c.closedPromise;
    clearInterval(unsolicited);
    expect(code).toBe(1006);
    const answering = await Client.connect(h.url);
    await sleep(500);
    expect(answering.closeCode).toBeUndefined();
  });

  it("ws - a gateway that was not started refuses connections with 1001", async () => {
    gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime() });
    const server = http.createServer();
    const t = attachWebSocket(gateway, { server });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const ws = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/gateway`);
    const code = await new Promise<number>((resolve) => ws.once("close", (c) => resolve(c)));
    expect(code).toBe(1001);
    await t.close();
    server.close();
    gateway = undefined;
  });

  it("createGateway - refuses a misconfiguration at construction with a TypeError", () => {
    expect(() => createGateway({} as any)).toThrow(TypeError);
    expect(() => createGateway({ storage: memoryStorage() } as any)).toThrow(/runtime/);
    expect(() => createGateway({ storage: {} as any, runtime: demoRuntime() })).toThrow(/storage/);
    expect(() => createGateway({ storage: memoryStorage(), runtime: demoRuntime(), maxFrameBytes: -1 })).toThrow(
      /maxFrameBytes/,
    );
    expect(() => createGateway({ storage: memoryStorage(), runtime: demoRuntime(), push: [{} as any] })).toThrow(
      /PushSender/,
    );
    expect(() => createGateway({ storage: memoryStorage(), runtime: demoRuntime(), helloTimeoutMs: 0 })).toThrow(
      /helloTimeoutMs/,
    );
    expect(() =>
      createGateway({ storage: memoryStorage(), runtime: demoRuntime(), maxConnectionsPerIp: Number.NaN }),
    ).toThrow(/maxConnectionsPerIp/);
    expect(() =>
      createGateway({
        storage: memoryStorage(),
        runtime: demoRuntime(),
        backpressure: { softBytes: 10, hardBytes: 5 },
      }),
    ).toThrow(/hardBytes/);
    expect(() =>
      attachWebSocket(createGateway({ storage: memoryStorage(), runtime: demoRuntime() }), { pongTimeoutMs: -1 }),
    ).toThrow(TypeError);
  });
});

function upgradeRequest(path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;
}

/**
 * Write raw bytes to the server and read until it closes the connection. No client-side limit: a
 * socket the server leaves open fails the test by its timeout, however slow the machine is.
 */
async function rawHttp(port: number, request: string): Promise<{ text: string; ms: number }> {
  const started = Date.now();
  const socket = net.connect(port, "127.0.0.1");
  let text = "";
  socket.on("data", (d) => (text += d.toString()));
  socket.on("error", () => undefined);
  if (request) socket.write(request);
  await new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return { text, ms: Date.now() - started };
}
