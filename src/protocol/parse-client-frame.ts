/**
 * Parsing a text frame from a device into a validated {@link ClientFrame}: JSON, the envelope
 * (docs/PROTOCOL.md §1), the shape limits, then the payload struct of its type. Every failure is
 * a {@link FrameError} whose message names the field at fault.
 * @module
 */
import { literal, optional, record, string, type, union, unknown, validate, type Struct } from "superstruct";
import { GatewayError } from "./errors.js";
import { clientFrameStructs, type ClientFrame } from "./client-frames.js";
import { frameShapeProblem } from "./frame-shape.js";
import { hotFrame } from "./hot-frames.js";

/** The structs in a Map, so that a frame type such as `toString` never finds `Object.prototype`. */
// biome-ignore lint/suspicious/noExplicitAny: superstruct's Struct is invariant in its type parameters: a table of structs of different frames needs any
const structsByType: ReadonlyMap<string, Struct<any, any>> = new Map(Object.entries(clientFrameStructs));

/** The envelope of every frame (docs/PROTOCOL.md §1). */
const envelope = type({
  type: string(),
  id: optional(union([string(), literal(null)])),
  payload: optional(union([record(string(), unknown()), literal(null)])),
});

/**
 * Whatever is known of a frame that failed validation: its type and request id, so that the
 * error can be sent with the id.
 */
export class FrameError extends GatewayError {
  readonly frameType: string | undefined;
  readonly requestId: string | undefined;
  constructor(message: string, frameType?: string, requestId?: string) {
    super("unsupported", message);
    this.frameType = frameType;
    this.requestId = requestId;
  }
}

/** Longest validation message sent back: superstruct quotes the value it got, which may be most of the frame. */
const MAX_MESSAGE_CHARS = 300;

/** A frame type quoted in a message, cut short: an error never echoes most of a frame. */
function quoteType(type: string): string {
  return JSON.stringify(type.length > 64 ? `${type.slice(0, 64)}…` : type);
}

function describeFailure(frameType: string, failure: { path: Array<string | number>; message: string }): string {
  const field = failure.path.join(".");
  // The field is named once, in our words, instead of superstruct's "At path: x -- " prefix.
  const prefix = `At path: ${field} -- `;
  const detail = field && failure.message.startsWith(prefix) ? failure.message.slice(prefix.length) : failure.message;
  const text = field ? `invalid ${frameType}: field "${field}": ${detail}` : `invalid ${frameType}: ${detail}`;
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
}

/**
 * Validate against a struct; a failure becomes a {@link FrameError}. superstruct quotes the wrong
 * value with `${value}`, which throws for an object that has its own `toString` field: that frame
 * is refused the same way, without naming the field.
 */
function check<T>(
  value: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: the schema parameter of a struct is not read here
  struct: Struct<T, any>,
  label: string,
  frameType: string | undefined,
  requestId: string | undefined,
): T {
  // biome-ignore lint/suspicious/noExplicitAny: the schema parameter of a struct is not read here
  let result: ReturnType<typeof validate<T, any>>;
  try {
    result = validate(value, struct);
  } catch {
    throw new FrameError(`invalid ${label}: a field has a value of the wrong type`, frameType, requestId);
  }
  const [failure, valid] = result;
  if (failure) throw new FrameError(describeFailure(label, failure), frameType, requestId);
  return valid as T;
}

/**
 * Parse and validate one text frame. Throws {@link FrameError} (code `unsupported`) naming the
 * field at fault; never throws anything else.
 */
export function parseClientFrame(text: string): ClientFrame {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new FrameError("malformed JSON");
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new FrameError("a frame is a JSON object");
  const requestId = typeof (raw as { id?: unknown }).id === "string" ? (raw as { id: string }).id : undefined;
  const rawType = typeof (raw as { type?: unknown }).type === "string" ? (raw as { type: string }).type : undefined;
  const shapeProblem = frameShapeProblem(raw);
  if (shapeProblem) throw new FrameError(shapeProblem, rawType, requestId);
  const hot = hotFrame(raw as Record<string, unknown>);
  if (hot) return hot;
  const frame = check(raw, envelope, "frame", rawType, requestId);
  const struct = structsByType.get(frame.type);
  if (!struct) throw new FrameError(`unknown frame type ${quoteType(frame.type)}`, frame.type, requestId);
  const payload = check(frame.payload ?? {}, struct, frame.type, frame.type, requestId);
  return { type: frame.type, id: requestId, payload } as ClientFrame;
}
