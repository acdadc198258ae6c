/**
 * A Chat Completions request read as a conversation (docs/PROTOCOL.md §19): the earlier turns a
 * stateless client re-sends, and the user's new message.
 * @module
 */
import { readImageUrl, type DoorImage } from "./door-images.js";
import { invalidRequest } from "./openai-errors.js";

/** One earlier message as the gateway compares it: who said it, and its text. */
export interface ChatTurn {
  role: "user" | "assistant";
  text: string;
}

/** A message as read from a request: its turn, and the images it carried (`data:` URLs, decoded). */
export interface ReadTurn extends ChatTurn {
  images: DoorImage[];
}

/** What a Chat Completions request asks. */
export interface ChatRequest {
  /** The channel, by name, `chat_id` or `default`. */
  model: string;
  /** Every message before the last, `system`, `developer` and `tool` messages left out. */
  earlier: ChatTurn[];
  /** The user's new message. */
  last: string;
  /** The images of the user's new message, sent with it as media (docs/PROTOCOL.md §19.3). */
  images: DoorImage[];
  stream: boolean;
  includeUsage: boolean;
}

/** Bounds on a request's shape; the body's bytes are bounded before it is parsed. */
export const CHAT_INPUT_LIMITS = {
  /** Messages in one request. */
  maxMessages: 2_000,
  /** Characters of a model name. */
  maxModelChars: 256,
} as const;

const IGNORED_ROLES = new Set(["system", "developer", "tool", "function"]);

/** Whether a JSON value is an object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The refusal of a content part of a type no door reads. */
export function partRefusal(type: unknown, where: string): never {
  throw invalidRequest(
    `${where}: content parts of type "${String(type).slice(0, 40)}" are not supported`,
    "unsupported_content",
  );
}

/** A content part: its text, or the image of a `data:` URL; any other part is refused. */
function readPart(part: unknown, where: string): string | DoorImage {
  if (!isRecord(part)) throw invalidRequest(`${where}: a content part must be an object`);
  if (part.type === "text" && typeof part.text === "string") return part.text;
  if (part.type === "image_url") return readImageUrl(isRecord(part.image_url) ? part.image_url.url : undefined, where);
  partRefusal(part.type, where);
}

/** Parts read as one message: text parts joined by newlines, and the images in order. */
export function joinParts(parts: Array<string | DoorImage>): { text: string; images: DoorImage[] } {
  const texts = parts.filter((p): p is string => typeof p === "string");
  return { text: texts.join("\n"), images: parts.filter((p): p is DoorImage => typeof p !== "string") };
}

/** A message's text and images: a string, parts, or nothing (`null`). */
function readContent(content: unknown, where: string): { text: string; images: DoorImage[] } {
  if (content === undefined || content === null) return { text: "", images: [] };
  if (typeof content === "string") return { text: content, images: [] };
  if (Array.isArray(content)) return joinParts(content.map((part, i) => readPart(part, `${where}.content[${i}]`)));
  throw invalidRequest(`${where}.content must be a string or an array of parts`);
}

/** The messages as turns, in order, with the roles the gateway ignores left out. */
function readTurns(messages: unknown[]): ReadTurn[] {
  const turns: ReadTurn[] = [];
  messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    if (!isRecord(message) || typeof message.role !== "string")
      throw invalidRequest(`${where} must be an object with a role`);
    if (IGNORED_ROLES.has(message.role)) return;
    if (message.role !== "user" && message.role !== "assistant")
      throw invalidRequest(`${where}.role "${message.role.slice(0, 40)}" is not supported`);
    turns.push({ role: message.role, ...readContent(message.content, where) });
  });
  return turns;
}

/** The earlier turns as compared and imported: text only (their images were sent with them before). */
export function textTurns(turns: readonly ReadTurn[]): ChatTurn[] {
  return turns.map(({ role, text }) => ({ role, text }));
}

/** Reads and checks a `/v1/chat/completions` body; anything malformed is a 400 naming the field. */
export function readChatRequest(body: unknown): ChatRequest {
  if (!isRecord(body)) throw invalidRequest("the body must be a JSON object");
  const { model, messages, stream, stream_options: streamOptions } = body;
  if (typeof model !== "string" || model === "" || model.length > CHAT_INPUT_LIMITS.maxModelChars)
    throw invalidRequest("model must name a channel", "invalid_model");
  if (!Array.isArray(messages) || messages.length === 0) throw invalidRequest("messages must be a non-empty array");
  if (messages.length > CHAT_INPUT_LIMITS.maxMessages)
    throw invalidRequest(`at most ${CHAT_INPUT_LIMITS.maxMessages} messages`);
  if (stream !== undefined && stream !== null && typeof stream !== "boolean")
    throw invalidRequest("stream must be a boolean");
  const finalMessage = messages[messages.length - 1];
  if (!isRecord(finalMessage) || finalMessage.role !== "user")
    throw invalidRequest("the last message must be the user's", "last_message_not_user");
  const turns = readTurns(messages);
  const last = turns.pop() as ReadTurn;
  if (last.text.trim() === "" && last.images.length === 0) throw invalidRequest("the last message has no text");
  return {
    model,
    earlier: textTurns(turns),
    last: last.text,
    images: last.images,
    stream: stream === true,
    includeUsage: isRecord(streamOptions) && streamOptions.include_usage === true,
  };
}
