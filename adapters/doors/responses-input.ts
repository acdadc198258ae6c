/**
 * A `POST /v1/responses` request read as a conversation (docs/PROTOCOL.md §19): `input` as a
 * string or message items, and the answer it continues when it names one.
 * @module
 */
import {
  CHAT_INPUT_LIMITS,
  isRecord,
  joinParts,
  partRefusal,
  textTurns,
  type ChatTurn,
  type ReadTurn,
} from "./chat-input.js";
import { readImageUrl, type DoorImage } from "./door-images.js";
import { DoorError, invalidRequest } from "./openai-errors.js";

/** What a Responses request asks. */
export interface ResponsesRequest {
  /** The channel, by name, `chat_id` or `default`. */
  model: string;
  /** The answer whose lane the input continues: its `message_id` (the id without `resp_`). */
  previous: string | undefined;
  /** Every message item before the last, `system` and `developer` left out. */
  earlier: ChatTurn[];
  /** The user's new message. */
  last: string;
  /** The images of the user's new message, sent with it as media. */
  images: DoorImage[];
  stream: boolean;
}

/** A response id: `resp_` and the answer's `message_id`. */
const RESPONSE_ID = /^resp_([A-Za-z0-9_-]{1,128})$/;

/** The answer's `message_id` a response id names, or a 404 (an id the gateway never gave out). */
export function answerIdOf(responseId: string): string {
  const match = RESPONSE_ID.exec(responseId);
  if (!match)
    throw new DoorError(404, "not_found_error", `no response "${responseId.slice(0, 140)}"`, "response_not_found");
  return match[1];
}

const IGNORED_ROLES = new Set(["system", "developer"]);
/** Items a client may send back from an earlier output; they carry nothing the lane lacks. */
const IGNORED_ITEMS = new Set(["reasoning"]);

/** A content part: its text, or the image of a `data:` URL; a URL to fetch, a file id or a file is refused. */
function readPart(part: unknown, where: string): string | DoorImage {
  if (!isRecord(part)) throw invalidRequest(`${where}: a content part must be an object`);
  if ((part.type === "input_text" || part.type === "output_text") && typeof part.text === "string") return part.text;
  if (part.type === "input_image") return readImageUrl(part.image_url, where);
  partRefusal(part.type, where);
}

/** An item as a turn, or undefined for an item the gateway ignores. */
function readItem(item: unknown, where: string): ReadTurn | undefined {
  if (!isRecord(item)) throw invalidRequest(`${where} must be an object`);
  if (typeof item.type === "string" && IGNORED_ITEMS.has(item.type)) return undefined;
  if (item.type !== undefined && item.type !== "message")
    throw invalidRequest(`${where}: items of type "${String(item.type).slice(0, 40)}" are not supported`);
  if (typeof item.role !== "string") throw invalidRequest(`${where} must have a role`);
  if (IGNORED_ROLES.has(item.role)) return undefined;
  if (item.role !== "user" && item.role !== "assistant")
    throw invalidRequest(`${where}.role "${item.role.slice(0, 40)}" is not supported`);
  const { content } = item;
  if (typeof content === "string") return { role: item.role, text: content, images: [] };
  if (!Array.isArray(content)) throw invalidRequest(`${where}.content must be a string or an array of parts`);
  return { role: item.role, ...joinParts(content.map((p, i) => readPart(p, `${where}.content[${i}]`))) };
}

/** The input's turns: a string is one user message. */
function readInput(input: unknown): ReadTurn[] {
  if (typeof input === "string") return [{ role: "user", text: input, images: [] }];
  if (!Array.isArray(input) || input.length === 0) throw invalidRequest("input must be a string or a non-empty array");
  if (input.length > CHAT_INPUT_LIMITS.maxMessages)
    throw invalidRequest(`at most ${CHAT_INPUT_LIMITS.maxMessages} items`);
  const turns: ReadTurn[] = [];
  input.forEach((item, i) => {
    const turn = readItem(item, `input[${i}]`);
    if (turn) turns.push(turn);
  });
  return turns;
}

/** Reads and checks a `/v1/responses` body; anything malformed is a 400 naming the field. */
export function readResponsesRequest(body: unknown): ResponsesRequest {
  if (!isRecord(body)) throw invalidRequest("the body must be a JSON object");
  const { model, input, stream, previous_response_id: previous } = body;
  if (typeof model !== "string" || model === "" || model.length > CHAT_INPUT_LIMITS.maxModelChars)
    throw invalidRequest("model must name a channel", "invalid_model");
  if (stream !== undefined && stream !== null && typeof stream !== "boolean")
    throw invalidRequest("stream must be a boolean");
  if (previous !== undefined && previous !== null && typeof previous !== "string")
    throw invalidRequest("previous_response_id must be a string");
  const turns = readInput(input);
  const last = turns.pop();
  if (last?.role !== "user") throw invalidRequest("the last input item must be the user's", "last_message_not_user");
  if (last.text.trim() === "" && last.images.length === 0) throw invalidRequest("the last input item has no text");
  return {
    model,
    previous: typeof previous === "string" ? answerIdOf(previous) : undefined,
    earlier: textTurns(turns),
    last: last.text,
    images: last.images,
    stream: stream === true,
  };
}
