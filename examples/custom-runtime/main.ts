/**
 * The calculator agent of docs/CUSTOM-RUNTIME.md behind a gateway:
 * `npx tsx examples/custom-runtime/main.ts`, then connect a device to the printed URL.
 * @module
 */
import { pathToFileURL } from "node:url";
import { createGateway } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { listenWebSocket } from "chat-gateway/ws";
import { calculatorRuntime } from "./runtime.js";

/** Starts the gateway on 127.0.0.1:`port` (0: any free port); returns its WebSocket URL and a `close`. */
export async function start({ port = Number(process.env.PORT ?? 8787) } = {}) {
  const gateway = createGateway({ storage: memoryStorage(), runtime: calculatorRuntime() });
  await gateway.start();
  const ws = await listenWebSocket(gateway, { port });
  return {
    url: ws.url,
    async close() {
      await gateway.close();
      await ws.close();
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  console.log(`chat-gateway on ${(await start()).url}`);
