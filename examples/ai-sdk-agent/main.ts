/**
 * chat-gateway in front of an existing AI SDK agent (its model, system prompt and tools):
 * `AI_GATEWAY_API_KEY=… npx tsx examples/ai-sdk-agent/main.ts`, or pass any provider's model to `start`.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { tool, type LanguageModel } from "ai";
import { z } from "zod";
import { createGateway } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";

// The agent you already have.
const system = "You are a helpful assistant. Use the clock tool for anything about time.";
const tools = { clock: tool({ description: "The current time, ISO 8601", inputSchema: z.object({}), execute: async () => new Date().toISOString() }) };

/** Starts the gateway on 127.0.0.1:`port` (0: any free port); returns its WebSocket URL and a `close`. */
export async function start({ port = Number(process.env.PORT ?? 8787), model = (process.env.AI_MODEL ?? "openai/gpt-4o-mini") as LanguageModel } = {}) {
  const gateway = createGateway({ storage: memoryStorage(), runtime: aiSdkRuntime({ model, system, tools }) });
  await gateway.start();
  const server = http.createServer();
  const ws = attachWebSocket(gateway, { server, path: "/ws/gateway" });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/gateway`,
    async close() {
      await gateway.close();
      await ws.close();
      server.close();
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) console.log(`chat-gateway on ${(await start()).url}`);
