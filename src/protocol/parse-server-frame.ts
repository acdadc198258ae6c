/**
 * Checking a frame received from the gateway against the gateway → client structs
 * (docs/PROTOCOL.md §1.2): strictly, for tests and tools that hold a gateway to this protocol
 * version, or leniently, for a client that must keep working with a newer gateway.
 * @module
 */
import { validate, type Struct } from "superstruct";
import { GatewayError } from "./errors.js";
import { serverFrameStructs, type ServerFrame } from "./server-frames.js";

/** The structs in a Map, so that a frame type such as `toString` never finds `Object.prototype`. */
// biome-ignore lint/suspicious/noExplicitAny: superstruct's Struct is invariant in its type parameters: a table of structs of different frames needs any
const structsByType: ReadonlyMap<string, Struct<any, any>> = new Map(Object.entries(serverFrameStructs));

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What is wrong with the envelope `{type, id?, seq?, payload}` (docs/PROTOCOL.md §1), or undefined. */
function envelopeProblem(frame: unknown): string | undefined {
  if (!isObject(frame)) return "a frame is a JSON object";
  if (typeof frame.type !== "string") return `field "type": expected a string`;
  if (frame.id !== undefined && typeof frame.id !== "string") return `${frame.type}: field "id": expected a string`;
  if (frame.seq !== undefined && !(Number.isSafeInteger(frame.seq) && (frame.seq as number) > 0))
    return `${frame.type}: field "seq": expected a positive integer`;
  if (!isObject(frame.payload)) return `${frame.type}: field "payload": expected an object`;
  return undefined;
}

function failureText(type: string, failure: { path: Array<string | number>; message: string }): string {
  if (!failure.path.length) return `${type}: payload: ${failure.message}`;
  const field = failure.path.join(".");
  // The field is named once, in our words, instead of superstruct's "At path: x -- " prefix.
  const detail = failure.message.replace(`At path: ${field} -- `, "");
  return `${type}: field "payload.${field}": ${detail}`;
}

/**
 * What is wrong with a decoded gateway frame, or undefined when it is exactly a frame this
 * protocol version sends: a known type, the envelope, and a payload with every required field,
 * each of the right type and no field the protocol does not define. For tests and conformance
 * tools; a client should use {@link parseServerFrame}, which tolerates a newer gateway.
 */
export function serverFrameProblem(frame: unknown): string | undefined {
  const problem = envelopeProblem(frame);
  if (problem) return problem;
  const { type, payload } = frame as { type: string; payload: unknown };
  const struct = structsByType.get(type);
  if (!struct) return `unknown frame type ${JSON.stringify(type)}`;
  const [failure] = validate(payload, struct);
  return failure ? failureText(type, failure) : undefined;
}

/**
 * Parse a text frame from the gateway into a typed {@link ServerFrame}, for a client. A frame type
 * this version does not know gives undefined (a newer gateway's frame: ignore it), and fields it
 * does not know are dropped, so a client keeps working against a newer gateway. Anything else
 * that is not a valid frame (not JSON, a wrong envelope, a missing or mistyped field) throws a
 * `GatewayError` `unsupported` naming the field.
 */
export function parseServerFrame(text: string): ServerFrame | undefined {
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    throw new GatewayError("unsupported", "a gateway frame is not JSON");
  }
  const problem = envelopeProblem(frame);
  if (problem) throw new GatewayError("unsupported", problem);
  const { type, id, seq, payload } = frame as { type: string; id?: string; seq?: number; payload: unknown };
  const struct = structsByType.get(type);
  if (!struct) return undefined;
  const [failure, valid] = validate(payload, struct, { coerce: true, mask: true });
  if (failure) throw new GatewayError("unsupported", failureText(type, failure));
  return {
    type,
    ...(id === undefined ? {} : { id }),
    ...(seq === undefined ? {} : { seq }),
    payload: valid,
  } as ServerFrame;
}
