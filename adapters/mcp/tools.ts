/**
 * The MCP server of the bridges (docs/PROTOCOL.md §20.2): five tools over one gateway link.
 * @module
 */
import { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { laneName, laneOfChannel, listChannels, resolveLane } from "./lanes.js";
import type { McpGatewayLink } from "./link.js";
import { errorResult, toolResult } from "./results.js";
import { sendMessage } from "./send-message.js";

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** How long `send_message` waits for its answer, ms (default 30 min); the turn goes on after. */
  maxWaitMs?: number;
  /** The `serverInfo.version` the server reports (default the package's). */
  version?: string;
}

/** How many messages `read_conversation` reads unless asked (at most 100). */
const DEFAULT_READ = 20;

interface HistoryItem {
  message_id: string;
  role: string;
  text: string;
  status?: string;
  ts?: number;
}

/** Runs a tool body, turning whatever it throws into an `isError` result. */
async function guarded(body: () => Promise<ReturnType<typeof toolResult>>): Promise<ReturnType<typeof toolResult>> {
  try {
    return await body();
  } catch (error) {
    return errorResult(error);
  }
}

function registerReadTools(server: McpServer, link: McpGatewayLink): void {
  server.registerTool(
    "list_conversations",
    {
      title: "List conversations",
      description: "The channels and threads of the gateway, each with its lane, title and unread count.",
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true },
    },
    () =>
      guarded(async () => {
        const conversations = (await listChannels(link))
          .filter((c) => !c.archived)
          .map((c) => ({ lane: laneName(laneOfChannel(c)), title: c.name, kind: c.kind, unread: c.unread ?? 0 }));
        const lines = conversations.map((c) => `${c.lane}  ${c.title}${c.unread ? ` (${c.unread} unread)` : ""}`);
        return toolResult(lines.join("\n") || "no conversations", { conversations });
      }),
  );
  server.registerTool(
    "read_conversation",
    {
      title: "Read a conversation",
      description: "The latest messages of a conversation, oldest first.",
      inputSchema: z.object({
        lane: z.string().min(1).max(300).describe("chat_id or chat_id/thread_id, as list_conversations gives it"),
        limit: z.number().int().min(1).max(100).optional().describe(`how many messages (default ${DEFAULT_READ})`),
      }),
      annotations: { readOnlyHint: true },
    },
    ({ lane, limit }) =>
      guarded(async () => {
        const where = await resolveLane(link, lane);
        const page = await link.request("history", { ...where, limit: limit ?? DEFAULT_READ });
        const messages = ((page.messages ?? []) as HistoryItem[]).map((m) => ({
          message_id: m.message_id,
          role: m.role,
          text: m.text,
          ...(m.status ? { status: m.status } : {}),
          ...(m.ts !== undefined ? { ts: m.ts } : {}),
        }));
        const text = messages.map((m) => `${m.role}: ${m.text}`).join("\n\n");
        return toolResult(text || "no messages", { lane: laneName(where), messages, has_more: page.has_more === true });
      }),
  );
}

function registerSend(server: McpServer, link: McpGatewayLink, maxWaitMs: number): void {
  server.registerTool(
    "send_message",
    {
      title: "Send a message",
      description:
        "Sends a message to the agent and waits for its answer, reporting progress while it streams. " +
        "Without a lane it starts a new conversation.",
      inputSchema: z.object({
        lane: z.string().min(1).max(300).optional().describe("chat_id or chat_id/thread_id; absent: a new thread"),
        text: z.string().min(1).describe("the message"),
      }),
    },
    ({ lane, text }, ctx) =>
      guarded(async () => {
        const token = ctx.mcpReq._meta?.progressToken;
        const progress = (step: number, message: string) => {
          if (token === undefined) return;
          void ctx.mcpReq
            .notify({ method: "notifications/progress", params: { progressToken: token, progress: step, message } })
            .catch(() => undefined);
        };
        const answer = await sendMessage(link, { lane, text }, { progress, signal: ctx.mcpReq.signal, maxWaitMs });
        const result = toolResult(answer.text || `(the answer ended ${answer.status})`, { ...answer });
        return answer.status === "error" ? { ...result, isError: true } : result;
      }),
  );
}

function registerAskTools(server: McpServer, link: McpGatewayLink): void {
  server.registerTool(
    "list_open_asks",
    {
      title: "List open asks",
      description: "Questions and approvals the agent is waiting for, oldest first; answer one with answer_ask.",
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true },
    },
    () =>
      guarded(async () => {
        const asks = (await link.openAsks()).map(
          (a): Record<string, unknown> => ({
            ...a,
            kind: String(a.kind).replace(/^picker\./, ""),
            lane: laneName({ chat_id: String(a.chat_id), thread_id: (a.thread_id as string | null) ?? null }),
          }),
        );
        const lines = asks.map((a) => {
          const choices = ((a.options ?? a.models ?? []) as Array<{ id: string; label: string }>)
            .map((o) => `${o.id} (${o.label})`)
            .join(", ");
          return `${a.picker_id} [${a.kind}] ${String(a.title)}${choices ? `: ${choices}` : ""}`;
        });
        return toolResult(lines.join("\n") || "no open asks", { asks });
      }),
  );
  server.registerTool(
    "answer_ask",
    {
      title: "Answer an ask",
      description: "Answers an open ask with one of its options and/or text. The first answer from any device wins.",
      inputSchema: z.object({
        picker_id: z.string().min(1).max(64),
        option_id: z.string().min(1).max(200).optional(),
        text: z.string().max(10_000).optional(),
      }),
    },
    ({ picker_id, option_id, text }) =>
      guarded(async () => {
        const resolved = await link.request("picker.select", {
          picker_id,
          ...(option_id !== undefined ? { option_id } : {}),
          ...(text !== undefined ? { text } : {}),
        });
        const said = [resolved.outcome, resolved.option_id, resolved.text].filter((x) => x !== undefined).join(" ");
        return toolResult(`ask ${picker_id}: ${said}`, { ...resolved });
      }),
  );
}

/** The answer wait of the options. @throws {TypeError} when it is not a positive number */
export function maxWaitOf(options: McpServerOptions): number {
  const maxWaitMs = options.maxWaitMs ?? 30 * 60_000;
  if (!Number.isFinite(maxWaitMs) || maxWaitMs <= 0)
    throw new TypeError(`maxWaitMs must be positive, got ${maxWaitMs}`);
  return maxWaitMs;
}

/**
 * An MCP server whose tools act through `link` (docs/PROTOCOL.md §20.2): `list_conversations`,
 * `read_conversation`, `send_message`, `list_open_asks` and `answer_ask`. Connect it to a
 * transport of the MCP SDK, or serve it with the SDK's `serveStdio` or `createMcpHandler`.
 */
export function createMcpServer(link: McpGatewayLink, options: McpServerOptions = {}): McpServer {
  const maxWaitMs = maxWaitOf(options);
  const server = new McpServer(
    { name: "chat-gateway", version: options.version ?? "0.1.0" },
    {
      capabilities: { tools: {} },
      instructions: "Conversations with the agent behind a chat-gateway, shared with the person's other devices.",
    },
  );
  registerReadTools(server, link);
  registerSend(server, link, maxWaitMs);
  registerAskTools(server, link);
  return server;
}
