/**
 * The tool calls an answer keeps (docs/PROTOCOL.md §14.1): one entry per call in call order, each
 * argument and output bounded to 16 KiB of UTF-8 (JSON text for arguments and non-text outputs),
 * cut at a character boundary and marked `truncated`. A call still open when the turn ends stays
 * `ok: false` with `output: null`. All the entries of one answer together hold at most 256 KiB of
 * JSON, so its final frame, its stored copy and a `history` page stay within their byte caps
 * however many calls a model makes.
 * @module
 */
import type { ToolCall } from "../contracts/records.js";
import { fieldBytes, jsonBytes, jsonText, longestJsonPrefix } from "../support/json-text.js";

/** The bound of one stored argument or output (bytes of UTF-8). */
export const TOOL_FIELD_BYTES = 16 * 1024;

/**
 * The bound of an answer's stored tool calls together (bytes of the JSON of its `tools`). With text
 * and reasoning at their own limit, the answer's `message.stop` stays well under the 1 MiB frame
 * limit; it still holds about a dozen arguments or outputs at their full 16 KiB.
 */
export const TOOLS_BYTES = 256 * 1024;

/**
 * What arguments and outputs leave of {@link TOOLS_BYTES} for the entries of later calls: once
 * reached, a call is still kept with its name, preview and outcome, only its fields are cut.
 */
const ENTRY_RESERVE = 64 * 1024;

/** An entry is measured with `duration: 0`; the digits of the real one may take this much more. */
const DURATION_DIGITS = 24;

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

/** The stored form of a value: as it is when its text fits, else its text cut. */
function bounded<T>(value: T, asText: (v: T) => string): { value: T | string; truncated: boolean } {
  const short = cut(asText(value), TOOL_FIELD_BYTES);
  return short === undefined ? { value, truncated: false } : { value: short, truncated: true };
}

/**
 * The stored tool calls of one answer, within {@link TOOLS_BYTES}: each argument and output is cut
 * to its 16 KiB and to what the answer's calls have left of their bound.
 */
export class ToolCallLog {
  // The array's brackets.
  #used = 2;

  /**
   * Start a stored call with its arguments bounded, no output yet. Undefined when not even the
   * entry without arguments fits any more: the answer's tools are full.
   */
  start(index: number, name: string, preview: string, args: Record<string, unknown>): ToolCall | undefined {
    const call: ToolCall = { index, name, preview, args: "", output: null, ok: false, duration: 0 };
    // Measured with every field it can gain, and the comma before it.
    const entry = jsonBytes({ ...call, truncated: true }) + DURATION_DIGITS + 1;
    if (this.#used + entry > TOOLS_BYTES) return undefined;
    this.#used += entry;
    const stored = this.#fit(args, jsonText, jsonBytes(""));
    call.args = stored.value;
    if (stored.truncated) call.truncated = true;
    return call;
  }

  /** End a stored call with its output (bounded) and outcome. */
  end(call: ToolCall, output: unknown, ok: boolean, duration: number): void {
    const stored =
      output === null
        ? { value: null, truncated: false }
        : this.#fit(output, (v) => (typeof v === "string" ? v : jsonText(v)), jsonBytes(null));
    call.output = stored.value;
    call.ok = ok;
    call.duration = duration;
    if (stored.truncated) call.truncated = true;
  }

  /**
   * `value` bounded to {@link TOOL_FIELD_BYTES}, then cut to the room its answer's fields have left;
   * its bytes beyond `measured` (what the entry was measured with in its place) are counted.
   */
  #fit<T>(value: T, asText: (v: T) => string, measured: number): { value: T | string; truncated: boolean } {
    const stored = bounded(value, asText);
    const room = TOOLS_BYTES - ENTRY_RESERVE - this.#used;
    const size = fieldBytes(stored.value) - measured;
    if (size <= room) {
      this.#used += Math.max(0, size);
      return stored;
    }
    const text = typeof stored.value === "string" ? stored.value : asText(stored.value);
    const short = longestJsonPrefix(text, room + measured - 2);
    this.#used += Math.max(0, jsonBytes(short) - measured);
    return { value: short, truncated: true };
  }
}
