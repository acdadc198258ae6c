/**
 * The frames every device sends on every connection (`hello`, `sync`, `ping`), taken without the
 * payload structs when they are plainly valid. superstruct's validation cost about 0.1 ms a frame
 * in a CPU profile of a reconnect storm (bench/capacity.ts), a tenth of the gateway's time there.
 * Anything less plain (a field of another type, an array for an object, null where a field is
 * optional) is left to the structs, so every refusal and its message stay theirs.
 * @module
 */
import type { ClientFrame } from "./client-frames.js";

type Fields = Record<string, unknown>;

const isInteger = (v: unknown) => typeof v === "number" && Number.isInteger(v);
const optionalString = (v: unknown) => v === undefined || typeof v === "string";
const optionalBoolean = (v: unknown) => v === undefined || typeof v === "boolean";
const isFields = (v: unknown): v is Fields => typeof v === "object" && v !== null && !Array.isArray(v);

function plainCaps(caps: unknown): boolean {
  if (caps === undefined) return true;
  if (!isFields(caps)) return false;
  const { min_protocol: min, media, push, streaming, pickers, delta } = caps;
  const flags = [media, streaming, pickers, delta].every(optionalBoolean);
  return flags && (min === undefined || isInteger(min)) && optionalString(push);
}

/** `webpush` takes any value here: its grammar is checked later, with a message naming the field. */
function plainHello(p: Fields): boolean {
  return (
    typeof p.token === "string" &&
    typeof p.device_id === "string" &&
    optionalString(p.device_name) &&
    optionalString(p.fcm_token) &&
    optionalString(p.ntfy_topic) &&
    plainCaps(p.caps)
  );
}

function plainPayload(type: unknown, p: Fields): boolean {
  switch (type) {
    case "hello":
      return plainHello(p);
    case "sync":
      return isInteger(p.cursor);
    case "ping":
      return p.ts === undefined || isInteger(p.ts);
    default:
      return false;
  }
}

/**
 * The frame, when `raw` (a decoded frame within the shape limits) is a plainly valid `hello`,
 * `sync` or `ping`: what the structs would make of it; otherwise undefined.
 */
export function hotFrame(raw: Fields): ClientFrame | undefined {
  const { type, id } = raw;
  if (id !== undefined && id !== null && typeof id !== "string") return undefined;
  const payload = raw.payload ?? {};
  if (!isFields(payload) || !plainPayload(type, payload)) return undefined;
  return { type, id: typeof id === "string" ? id : undefined, payload } as ClientFrame;
}
