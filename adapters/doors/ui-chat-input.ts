/**
 * The body of the AI SDK's `DefaultChatTransport` (`{id, messages, trigger, messageId?}`) read as
 * the chat it names and the conversation it holds (docs/PROTOCOL.md §19).
 * @module
 */
import { joinParts, type ChatTurn, type ReadTurn } from "./chat-input.js";
import { readImageUrl, type DoorImage } from "./door-images.js";
import { invalidRequest } from "./openai-errors.js";

/** What a `POST /api/chat` asks. */
export interface UiChatRequest {
  /** The chat's id: a `chat_id`, `chat_id/thread_id`, or an id of the client's own. */
  id: string;
  earlier: ChatTurn[];
  last: string;
  /** The images (file parts of an image type, as `data:` URLs) of the last user message. */
  images: DoorImage[];
  /** The UI message id of the last user message (the client's own, unique per message). */
  lastId: string;
  regenerate: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A UI message's text (its `text` parts joined by newlines) and images (its `file` parts of an
 * image type, as `data:` URLs); any other file is refused.
 */
function uiContent(message: Record<string, unknown>, where: string): { text: string; images: DoorImage[] } {
  if (!Array.isArray(message.parts)) throw invalidRequest(`${where}.parts must be an array`);
  const parts: Array<string | DoorImage> = [];
  message.parts.forEach((part, i) => {
    if (!isRecord(part)) throw invalidRequest(`${where}.parts[${i}] must be an object`);
    if (part.type === "text" && typeof part.text === "string") parts.push(part.text);
    else if (part.type === "file") {
      if (typeof part.mediaType !== "string" || !part.mediaType.toLowerCase().startsWith("image/"))
        throw invalidRequest(`${where}.parts[${i}]: only image files are supported`, "unsupported_content");
      parts.push(readImageUrl(part.url, `${where}.parts[${i}]`));
    }
    // Reasoning, tool, step and data parts are the gateway's own output coming back: left out.
  });
  return joinParts(parts);
}

/** Reads and checks a `/api/chat` body. */
export function readUiChatRequest(body: unknown): UiChatRequest {
  if (!isRecord(body)) throw invalidRequest("the body must be a JSON object");
  const { id, messages, trigger } = body;
  if (typeof id !== "string" || id === "" || id.length > 256) throw invalidRequest("id must name the chat");
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > 2_000)
    throw invalidRequest("messages must be a non-empty array of at most 2,000");
  if (trigger !== undefined && trigger !== "submit-message" && trigger !== "regenerate-message")
    throw invalidRequest("trigger must be submit-message or regenerate-message");
  const turns: Array<ReadTurn & { id: string }> = [];
  messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(message) || typeof message.role !== "string") throw invalidRequest(`${where} must be a UI message`);
    if (message.role === "system") return;
    if (message.role !== "user" && message.role !== "assistant") throw invalidRequest(`${where}.role is not supported`);
    turns.push({
      role: message.role,
      ...uiContent(message, where),
      id: typeof message.id === "string" ? message.id : "",
    });
  });
  // A regenerate drops the answer being replaced: the last user message is sent again.
  while (trigger === "regenerate-message" && turns.length > 0 && turns[turns.length - 1].role === "assistant")
    turns.pop();
  const last = turns.pop();
  if (last?.role !== "user") throw invalidRequest("the last message must be the user's", "last_message_not_user");
  if (last.text.trim() === "" && last.images.length === 0) throw invalidRequest("the last message has no text");
  return {
    id,
    earlier: turns.map(({ role, text }): ChatTurn => ({ role, text })),
    last: last.text,
    images: last.images,
    lastId: last.id.slice(0, 128),
    regenerate: trigger === "regenerate-message",
  };
}
