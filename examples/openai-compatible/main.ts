/**
 * chat-gateway in front of any OpenAI-compatible server (llama.cpp, vLLM, Ollama, OpenRouter…):
 * `OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_MODEL=qwen3-8b npx tsx examples/openai-compatible/main.ts`
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { createGateway } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";

/** Starts the gateway on 127.0.0.1:`port` (0: any free port); returns its WebSocket URL and a `close`. */
export async function start({
  port = Number(process.env.PORT ?? 8787),
  baseUrl = process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:11434/v1",
  model = process.env.OPENAI_MODEL ?? "llama3.2",
  apiKey = process.env.OPENAI_API_KEY,
} = {}) {
  const runtime = openAICompatibleRuntime({
    baseUrl,
    apiKey,
    model,
    tools: {
      clock: {
        description: "The current time, ISO 8601",
        parameters: { type: "object", properties: {} },
        execute: () => new Date().toISOString(),
      },
    },
  });
  const gateway = createGateway({ storage: memoryStorage(), runtime });
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  console.log(`chat-gateway on ${(await start()).url}`);
