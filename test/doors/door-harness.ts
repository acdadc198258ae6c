// A real gateway with its doors and its WebSocket on one http.Server on 127.0.0.1: the doors are
// reached with the other side's own clients (the openai package, the AI SDK), devices with ws.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";
import { createGateway, type Gateway, type GatewayOptions } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { createDoors, type DoorOptions } from "chat-gateway/doors";

export interface DoorServer {
  gateway: Gateway;
  /** `http://127.0.0.1:<port>/v1`: the base URL an OpenAI client is given. */
  baseURL: string;
  origin: string;
  wsUrl: string;
  close(): Promise<void>;
}

const quietLogger = { info() {}, warn() {}, error() {} };

export async function startDoorServer(
  options: Partial<GatewayOptions> = {},
  doorOptions: DoorOptions = {},
): Promise<DoorServer> {
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: demoRuntime({ delayMs: 0 }),
    logger: quietLogger,
    ...options,
  } as GatewayOptions);
  await gateway.start();
  const doors = createDoors(gateway, doorOptions);
  const server = http.createServer((req, res) => {
    void doors.handle(req, res).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  const transport: WebSocketTransport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    gateway,
    origin: `http://127.0.0.1:${port}`,
    baseURL: `http://127.0.0.1:${port}/v1`,
    wsUrl: `ws://127.0.0.1:${port}/ws/gateway`,
    async close() {
      await gateway.close();
      await transport.close();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A door server per test, closed after it. */
export function doorServerPerTest(): typeof startDoorServer {
  const open: DoorServer[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  return async (options, doorOptions) => {
    const s = await startDoorServer(options, doorOptions);
    open.push(s);
    return s;
  };
}
