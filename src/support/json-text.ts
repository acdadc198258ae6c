/**
 * Sizes as they go on the wire: the bytes of a value's JSON, and the longest prefix of a string
 * that fits in a number of those bytes. Bounds on frames (a `history` page, an answer's tool
 * calls) are counted this way, escapes included, so a text full of quotes cannot pass them.
 * @module
 */

/** The UTF-8 bytes of `value`'s JSON. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}

/** `value`'s JSON text; "null" for what JSON leaves out, and the value as text for what it cannot hold (cycles, bigints). */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return String(value);
  }
}

/**
 * The bytes a tool call's stored `args` or `output` takes in a frame: a string as a JSON string
 * (a cut field is kept as text), anything else as its JSON text.
 */
export function fieldBytes(value: unknown): number {
  return typeof value === "string" ? jsonBytes(value) : Buffer.byteLength(jsonText(value), "utf8");
}

/** The longest prefix of `text` whose JSON string (escapes included, quotes excluded) fits in `room` bytes. */
export function longestJsonPrefix(text: string, room: number): string {
  if (room <= 0 || text === "") return "";
  // Every code unit takes at least one byte in JSON, so no prefix longer than `room` can fit.
  let lo = 0;
  let hi = Math.min(text.length, room);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (jsonBytes(text.slice(0, mid)) - 2 <= room) lo = mid;
    else hi = mid - 1;
  }
  // Never end on the first half of a surrogate pair.
  const code = text.charCodeAt(lo - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? lo - 1 : lo);
}
