/**
 * Encoding gateway → client frames. A frame fanned out to many devices is serialised once; the
 * variant for devices without streaming (a stored `message.stop` seen as `message`) too, and the
 * variant of a stored answer cut to `max_frame_bytes`.
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { ToolCall } from "../contracts/records.js";
import { cutTools } from "../outbox/tool-cut.js";

const encoded = new WeakMap<OutgoingFrame, string>();
const asMessage = new WeakMap<OutgoingFrame, OutgoingFrame>();
const cutToFit = new WeakMap<OutgoingFrame, { maxBytes: number; frame: OutgoingFrame }>();

/** The JSON text of a frame, with an optional request id; cached when there is no id. */
export function encodeFrame(frame: OutgoingFrame, id?: string): string {
  if (id !== undefined) {
    return JSON.stringify(
      frame.seq === undefined
        ? { type: frame.type, id, payload: frame.payload }
        : { type: frame.type, id, seq: frame.seq, payload: frame.payload },
    );
  }
  let text = encoded.get(frame);
  if (text === undefined) {
    text = JSON.stringify(
      frame.seq === undefined
        ? { type: frame.type, payload: frame.payload }
        : { type: frame.type, seq: frame.seq, payload: frame.payload },
    );
    encoded.set(frame, text);
  }
  return text;
}

/**
 * The JSON text of a frame within `maxBytes` (the device's `max_frame_bytes`) where its tool calls
 * can make it so: an answer whose tools were stored whole, before their 256 KiB bound or by a
 * storage that kept them, has them cut as a `history` item's are, live and in a replay
 * (docs/PROTOCOL.md §5). Any other frame as it is.
 */
export function encodeWithin(frame: OutgoingFrame, maxBytes: number, id?: string): string {
  const text = encodeFrame(frame, id);
  const tools = frame.payload.tools;
  // Tools first: a large frame without them (a history page) is not measured a second time.
  if (!Array.isArray(tools) || tools.length === 0 || !tooBig(text, maxBytes)) return text;
  let cut = id === undefined ? cutToFit.get(frame) : undefined;
  if (cut?.maxBytes !== maxBytes) {
    const bare = { ...frame, payload: { ...frame.payload, tools: [] } };
    const room = maxBytes - Buffer.byteLength(encodeFrame(bare, id), "utf8");
    cut = { maxBytes, frame: { ...bare, payload: { ...bare.payload, tools: cutTools(tools as ToolCall[], room) } } };
    if (id === undefined) cutToFit.set(frame, cut);
  }
  return encodeFrame(cut.frame, id);
}

/**
 * The `message` frame equivalent of a `message.stop` (same `message_id`, `text` = `final_text`,
 * same `seq`), for devices whose `caps.streaming` is false (docs/PROTOCOL.md §2.3).
 */
export function stopAsMessage(stop: OutgoingFrame): OutgoingFrame {
  let frame = asMessage.get(stop);
  if (frame === undefined) {
    const { final_text, ...rest } = stop.payload;
    frame = { type: "message", seq: stop.seq, payload: { ...rest, role: "assistant", text: final_text } };
    asMessage.set(stop, frame);
  }
  return frame;
}

/** Whether a text frame is over `max` bytes of UTF-8, without encoding it when its length decides. */
export function tooBig(text: string, max: number): boolean {
  // UTF-16 length never exceeds UTF-8 length, and UTF-8 is at most 3 bytes per UTF-16 unit.
  if (text.length > max) return true;
  if (text.length * 3 <= max) return false;
  return Buffer.byteLength(text, "utf8") > max;
}

/** Frames longer than this are not parsed just to find their id: a refused flood must stay cheap. */
const PEEK_MAX_CHARS = 16 * 1024;

/**
 * The request id of a frame's text, if it has one (for an answer to a frame that was not parsed).
 * A frame over 16 Ki characters gets no id: parsing a megabyte per refused frame would let a flood
 * past the rate budget cost what the budget is there to prevent.
 */
export function peekId(text: string): string | undefined {
  if (text.length > PEEK_MAX_CHARS) return undefined;
  try {
    const id = (JSON.parse(text) as { id?: unknown }).id;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}
