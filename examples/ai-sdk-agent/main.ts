/**
 * chat-gateway in front of an existing AI SDK agent (its model, system prompt and tools).
 *
 * Against a local OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio):
 * `OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.2 npx tsx examples/ai-sdk-agent/main.ts`
 * (`OPENAI_API_KEY` when the server wants one). Without `OPENAI_BASE_URL` it uses the Vercel AI
 * Gateway: `AI_GATEWAY_API_KEY=… AI_MODEL=openai/gpt-4o-mini npx tsx examples/ai-sdk-agent/main.ts`.
 * Or pass any provider's model to `start`.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { tool, type LanguageModel } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { z } from "zod";
import { createGateway } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";
import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk";

// The agent you already have.
const system = "You are a helpful assistant. Use the clock tool for anything about time.";
const tools = {
  clock: tool({
    description: "The current time, ISO 8601",
    inputSchema: z.object({}),
    execute: async () => new Date().toISOString(),
  }),
};

/** The model from the environment: a local OpenAI-compatible server when `OPENAI_BASE_URL` is set. */
export function modelFromEnv(env: NodeJS.ProcessEnv = process.env): LanguageModel {
  if (!env.OPENAI_BASE_URL) return (env.AI_MODEL ?? "openai/gpt-4o-mini") as LanguageModel;
  // includeUsage asks the server for token counts on the stream, as the answer footer shows them.
  const provider = createOpenAICompatible({
    name: "local",
    baseURL: env.OPENAI_BASE_URL,
    apiKey: env.OPENAI_API_KEY,
    includeUsage: true,
  });
  return provider(env.OPENAI_MODEL ?? "llama3.2");
}

/** Starts the gateway on 127.0.0.1:`port` (0: any free port); returns its WebSocket URL and a `close`. */
export async function start({ port = Number(process.env.PORT ?? 8787), model = modelFromEnv() } = {}) {
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  console.log(`chat-gateway on ${(await start()).url}`);
