/**
 * The prompt of a server-side turn (`gateway.post(owner, chat, {prompt})`, webhooks in mode
 * `turn`, docs/PROTOCOL.md §17): a user message stored in the lane, automation channels
 * included, which only the gateway writes.
 * @module
 */
import { GatewayError } from "../errors.js";
import { newId } from "../id-generator.js";
import type { Owner } from "../ids.js";
import type { StoredMessage } from "../contracts/records.js";
import type { Lane } from "../contracts/storage.js";
import { messagePayload } from "../protocol/message-payloads.js";
import type { MessageServices } from "./message-requests.js";

/** Store `text` as a user message of the lane, broadcast like any message; resolves with it. */
export async function storePrompt(hub: MessageServices, owner: Owner, lane: Lane, text: string): Promise<StoredMessage> {
  if (typeof text !== "string" || text.trim() === "") throw new GatewayError("unsupported", "post: prompt must be non-empty text");
  const message: StoredMessage = {
    message_id: newId("m"),
    role: "user",
    text,
    reasoning: "",
    ts: hub.now(),
    media: [],
    chat_id: lane.chat_id,
    thread_id: lane.thread_id,
  };
  await hub.store(owner, { messages: [message] }, [{ type: "message", payload: messagePayload(message) }]);
  return message;
}
