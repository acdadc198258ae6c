// A real gateway on a real ws server on 127.0.0.1, and real ws clients that record every frame.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";
import WebSocket from "ws";
import { createGateway, type AuthResult, type Authenticator, type Gateway, type GatewayOptions } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { attachWebSocket, type WebSocketOptions, type WebSocketTransport } from "chat-gateway/ws";
import { checkedFrame } from "../fixtures/frame-check.js";

export interface Frame {
  type: string;
  id?: string;
  seq?: number;
  payload: Record<string, any>;
}

export interface Harness {
  gateway: Gateway;
  url: string;
  server: http.Server;
  transport: WebSocketTransport;
  close(): Promise<void>;
}

const quietLogger = { info() {}, warn() {}, error() {} };

export async function startGateway(options: Partial<GatewayOptions> = {}, ws: WebSocketOptions = {}): Promise<Harness> {
  const storage = options.storage ?? memoryStorage();
  // The built-in storages are their own hook and schedule stores, as an embedder passes them.
  const stores = "putHook" in storage && "putSchedule" in storage ? { hookStore: storage, scheduleStore: storage } : {};
  const gateway = createGateway({
    storage,
    ...stores,
    runtime: demoRuntime({ delayMs: 0 }),
    mediaStore: memoryMediaStore(),
    logger: quietLogger,
    ...options,
  } as GatewayOptions);
  await gateway.start();
  const server = http.createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  const transport = attachWebSocket(gateway, { server, path: "/ws/gateway", ...ws });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    gateway,
    server,
    transport,
    url: `ws://127.0.0.1:${port}/ws/gateway`,
    async close() {
      await gateway.close();
      await transport.close();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * For a file whose tests start their own gateways: the returned function starts one as
 * `startGateway` does, and every gateway it started is closed after the test.
 */
export function gatewayPerTest(): typeof startGateway {
  const open: Harness[] = [];
  afterEach(async () => {
    for (const harness of open.splice(0)) await harness.close();
  });
  return async (options, ws) => {
    const harness = await startGateway(options, ws);
    open.push(harness);
    return harness;
  };
}

let nextId = 0;

/** A device: a real ws client that keeps every frame it receives, each checked against the protocol's structs. */
export class Client {
  readonly frames: Frame[] = [];
  readonly binary: Buffer[] = [];
  closeCode: number | undefined;
  /** The first frame of the wrong shape: every later wait fails with it. */
  shapeError: Error | undefined;
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  readonly closedPromise: Promise<number>;
  #waiters: Array<() => void> = [];

  constructor(url: string, headers?: Record<string, string>) {
    this.ws = new WebSocket(url, { headers });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once("open", () => resolve());
      this.ws.once("error", reject);
    });
    this.closedPromise = new Promise((resolve) => {
      this.ws.on("close", (code) => {
        this.closeCode = code;
        this.#wake();
        resolve(code);
      });
    });
    this.ws.on("message", (data, isBinary) => {
      if (isBinary) this.binary.push(data as Buffer);
      else {
        try {
          this.frames.push(checkedFrame<Frame>(String(data)));
        } catch (error) {
          this.shapeError ??= error as Error;
          this.frames.push(JSON.parse(String(data)));
        }
      }
      this.#wake();
    });
  }

  #wake() {
    for (const w of this.#waiters.splice(0)) w();
  }

  static async connect(
    url: string,
    hello: Record<string, unknown> = {},
    headers?: Record<string, string>,
  ): Promise<Client> {
    const client = new Client(url, headers);
    await client.opened;
    const ok = await client.request("hello", {
      token: "",
      device_id: `dev-${++nextId}`,
      device_name: "test",
      ...hello,
    });
    if (ok.type !== "hello.ok") throw new Error(`hello failed: ${JSON.stringify(ok)}`);
    return client;
  }

  send(type: string, payload?: unknown, id?: string): void {
    this.ws.send(JSON.stringify({ type, ...(id ? { id } : {}), ...(payload !== undefined ? { payload } : {}) }));
  }

  raw(text: string | Buffer): void {
    this.ws.send(text);
  }

  /** Send a request and wait for the frame that carries its id. */
  async request(type: string, payload?: unknown, timeoutMs = 5000): Promise<Frame> {
    const id = `r${++nextId}`;
    const from = this.frames.length;
    this.send(type, payload, id);
    return this.waitFor((f) => f.id === id, timeoutMs, from);
  }

  /** Wait for a frame matching the predicate (searching from index `from`). */
  async waitFor(match: (f: Frame) => boolean, timeoutMs = 5000, from = 0): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.shapeError) throw this.shapeError;
      const found = this.frames.slice(from).find(match);
      if (found) return found;
      if (this.closeCode !== undefined)
        throw new Error(`socket closed (${this.closeCode}) while waiting; frames: ${lastFrames(this.frames)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting; last frames: ${lastFrames(this.frames)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  of(type: string): Frame[] {
    return this.frames.filter((f) => f.type === type);
  }

  /** Send a message and wait for its turn to finish (typing off). */
  async say(payload: Record<string, unknown>): Promise<{ echo: Frame; final: Frame }> {
    const from = this.frames.length;
    const echo = await this.request("message.send", payload);
    if (echo.type !== "message") throw new Error(`send failed: ${JSON.stringify(echo)}`);
    const off = await this.waitFor((f) => f.type === "typing" && f.payload.on === false, 5000, from);
    void off;
    const final = this.frames
      .slice(from)
      .find(
        (f) =>
          (f.type === "message.stop" || (f.type === "message" && f.payload.role === "assistant")) &&
          f.payload.reply_to === echo.payload.message_id,
      );
    if (!final) throw new Error("no final frame");
    return { echo, final };
  }

  async close(): Promise<void> {
    if (this.closeCode !== undefined) return;
    this.ws.close();
    await this.closedPromise;
  }
}

/** Token "slow" waits until `release()`; any other token is let in at once. */
export function heldAuthenticator(): { authenticator: Authenticator; release(): void; held(): number } {
  const waiting: Array<() => void> = [];
  const result: AuthResult = { owner: "ann", user: null };
  return {
    authenticator: {
      authenticate: ({ token }) =>
        token === "slow"
          ? new Promise<AuthResult>((resolve) => waiting.push(() => resolve(result)))
          : Promise.resolve(result),
    },
    release() {
      for (const go of waiting.splice(0)) go();
    },
    held: () => waiting.length,
  };
}

/** The last five frames for a failure message, each cut to 300 characters (a streamed answer can be megabytes). */
function lastFrames(frames: readonly unknown[]): string {
  return frames
    .slice(-5)
    .map((frame) => {
      const json = JSON.stringify(frame);
      return json.length > 300 ? `${json.slice(0, 300)}… (${json.length} characters)` : json;
    })
    .join(", ");
}
