/**
 * The tool calls an answer keeps (docs/PROTOCOL.md §14): one entry per call in call order, each
 * argument and output bounded to 16 KiB of UTF-8 (JSON text for arguments and non-text outputs),
 * cut at a character boundary and marked `truncated`. A call still open when the turn ends stays
 * `ok: false` with `output: null`.
 * @module
 */
import type { ToolCall } from "../contracts/records.js";

/** The bound of one stored argument or output (bytes of UTF-8). */
export const TOOL_FIELD_BYTES = 16 * 1024;

const encoder = new TextEncoder();

/** `text` cut to at most `bytes` of UTF-8 without splitting a character; undefined when it fits. */
function cut(text: string, bytes: number): string | undefined {
  if (text.length * 3 <= bytes || encoder.encode(text).byteLength <= bytes) return undefined;
  let end = Math.min(text.length, bytes);
  while (end > 0 && encoder.encode(text.slice(0, end)).byteLength > bytes) end = Math.floor(end * 0.9);
  // Grow back to the largest fitting prefix, one character at a time from a prefix that fits.
  while (end < text.length) {
    const step = text.codePointAt(end)! > 0xffff ? 2 : 1;
    if (encoder.encode(text.slice(0, end + step)).byteLength > bytes) break;
    end += step;
  }
  // Never end between the halves of a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return String(value);
  }
}

/** The stored form of a value: as it is when its text fits, else its text cut. */
function bounded<T>(value: T, asText: (v: T) => string): { value: T | string; truncated: boolean } {
  const short = cut(asText(value), TOOL_FIELD_BYTES);
  return short === undefined ? { value, truncated: false } : { value: short, truncated: true };
}

/** Start a stored call: arguments bounded, no output yet. */
export function startedCall(index: number, name: string, preview: string, args: Record<string, unknown>): ToolCall {
  const stored = bounded(args, jsonText);
  const call: ToolCall = { index, name, preview, args: stored.value, output: null, ok: false, duration: 0 };
  if (stored.truncated) call.truncated = true;
  return call;
}

/** End a stored call with its output (bounded) and outcome. */
export function endCall(call: ToolCall, output: unknown, ok: boolean, duration: number): void {
  const stored = bounded(output, (v) => (typeof v === "string" ? v : jsonText(v)));
  call.output = stored.value;
  call.ok = ok;
  call.duration = duration;
  if (stored.truncated) call.truncated = true;
}
