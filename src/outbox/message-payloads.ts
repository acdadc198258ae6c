/**
 * The wire shapes of a stored message: the history item, and the `message` and
 * `message.stop` payloads built from it.
 * @module
 */
import type { HistoryItem, StoredMessage } from "../contracts/records.js";
import type { ServerPayloads } from "../protocol/server-frames.js";

/** The gateway's own commands (docs/PROTOCOL.md §4.4, §11), canonical names and aliases. */
const GATEWAY_COMMANDS = new Set([
  "/stop",
  "/cancel",
  "/new",
  "/reset",
  "/help",
  "/commands",
  "/approve",
  "/deny",
  "/answer",
  "/model",
]);

/**
 * Whether a user message's text is one of the gateway's commands (docs/PROTOCOL.md §14: such a
 * message carries `command: true`): its first word, after leading blanks, case-insensitively.
 */
export function isGatewayCommand(text: string): boolean {
  const first = /^\s*(\/\S+)/.exec(text)?.[1];
  return first !== undefined && GATEWAY_COMMANDS.has(first.toLowerCase());
}

/** A history item (docs/PROTOCOL.md §5), with the `status` and `reply_to` extensions; storage-only fields dropped. */
export function historyItem(m: StoredMessage): HistoryItem & { reply_to?: string } {
  const item: HistoryItem & { reply_to?: string } = {
    message_id: m.message_id,
    role: m.role,
    text: m.text,
    reasoning: m.reasoning,
    ts: m.ts,
    media: m.media,
  };
  if (m.model !== undefined) item.model = m.model;
  if (m.tokens !== undefined) item.tokens = m.tokens;
  if (m.runtime !== undefined) item.runtime = m.runtime;
  if (m.reply_to !== undefined) item.reply_to = m.reply_to;
  if (m.status !== undefined && m.role === "assistant") item.status = m.status;
  if (m.tools?.length && m.role === "assistant") item.tools = m.tools;
  if (m.asks?.length && m.role === "assistant") item.asks = m.asks;
  if (m.role === "user" && isGatewayCommand(m.text)) item.command = true;
  return item;
}

/** The payload of a `message` frame (docs/PROTOCOL.md §4.1): the history item with its lane and idempotency key. */
export function messagePayload(m: StoredMessage, clientMsgId?: string): ServerPayloads["message"] {
  const payload: ServerPayloads["message"] = { ...historyItem(m), chat_id: m.chat_id, thread_id: m.thread_id };
  const key = clientMsgId ?? m.client_msg_id;
  if (key !== undefined) payload.client_msg_id = key;
  return payload;
}

/** The payload of the `message.stop` that ends a streamed assistant message: `final_text` for `text`. */
export function stopPayload(m: StoredMessage): ServerPayloads["message.stop"] {
  const { role: _role, text, ...rest } = historyItem(m);
  return {
    ...rest,
    final_text: text,
    runtime: m.runtime ?? {},
    status: m.status ?? "complete",
    chat_id: m.chat_id,
    thread_id: m.thread_id,
  };
}
