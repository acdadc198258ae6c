/**
 * Earlier messages of a conversation stored in a lane without a turn: a door's client forked a
 * conversation, and the agent must see what came before (docs/PROTOCOL.md §19).
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import { newId } from "../support/id-generator.js";
import type { Owner } from "../protocol/ids.js";
import type { StoredMessage } from "../contracts/records.js";
import type { Lane } from "../contracts/storage.js";
import type { StoredFrame } from "../protocol/protocol.js";
import { messagePayload } from "../outbox/message-payloads.js";
import type { MessageServices } from "./message-requests.js";

/** One message to import: who said it and what. */
export interface ImportedMessage {
  role: "user" | "assistant";
  text: string;
}

/** The most messages one import takes. */
export const MAX_IMPORTED_MESSAGES = 2_000;

/**
 * Stores the messages in order, in one change, each broadcast as a stored `message` frame. No turn
 * runs: the assistant messages are complete answers. A lane that is gone stores nothing.
 */
export async function importMessages(
  services: MessageServices,
  owner: Owner,
  lane: Lane,
  messages: readonly ImportedMessage[],
): Promise<StoredMessage[]> {
  if (!Array.isArray(messages) || messages.length > MAX_IMPORTED_MESSAGES)
    throw new GatewayError("unsupported", `import: at most ${MAX_IMPORTED_MESSAGES} messages`);
  const resolved = await services.resolveLane(owner, lane.chat_id, lane.thread_id);
  if (resolved.channel.automation)
    throw new GatewayError("unsupported", "this is an automation channel: it is read-only");
  const where = { chat_id: resolved.chat_id, thread_id: resolved.thread_id };
  const now = services.now();
  const stored: StoredMessage[] = messages.map((m, i) => {
    if ((m.role !== "user" && m.role !== "assistant") || typeof m.text !== "string")
      throw new GatewayError("unsupported", `import: message ${i} needs a role of user or assistant and a text`);
    return {
      message_id: newId("m"),
      role: m.role,
      text: m.text,
      reasoning: "",
      // Distinct and in order, so history pages them as sent.
      ts: now - messages.length + i,
      media: [],
      ...(m.role === "assistant" ? { status: "complete" as const } : {}),
      ...where,
    };
  });
  if (stored.length === 0) return [];
  const frames: StoredFrame[] = stored.map((message) => ({ type: "message", payload: messagePayload(message) }));
  const requireChannels = where.thread_id === null ? [where.chat_id] : [where.chat_id, where.thread_id];
  const published = await services.store(owner, { messages: stored, requireChannels }, frames);
  if (!published.length) throw new GatewayError("not_found", `unknown chat_id "${lane.chat_id}"`);
  return stored;
}
