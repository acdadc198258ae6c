/**
 * What a device that joins mid-turn is sent for a running answer (docs/PROTOCOL.md §14.3): the
 * start, one update with the whole text and reasoning so far (a full text also for `caps.delta`
 * devices), a `tool.start` for every tool of the answer in call order, each finished one followed
 * by its `tool.end`, and typing on unless the turn waits for the person. Live frames, without
 * `seq`: a client keys them by `message_id` and tool `index`, so a second snapshot doubles nothing.
 * @module
 */
import type { OutgoingFrame } from "../contracts/bus.js";
import type { StoredMessage, ToolCall } from "../contracts/records.js";
import { usageFields } from "./answer-updates.js";

/** The frames that show a running answer as it stands. */
export function joinFrames(
  message: StoredMessage,
  running: ToolCall[],
  asking: boolean,
  streaming: boolean,
): OutgoingFrame[] {
  const open = new Set(running.map((t) => t.index));
  const where = { chat_id: message.chat_id, thread_id: message.thread_id };
  const frames: OutgoingFrame[] = [];
  if (streaming) {
    const id = message.message_id;
    frames.push({
      type: "message.start",
      payload: {
        message_id: id,
        role: "assistant",
        ...(message.reply_to ? { reply_to: message.reply_to } : {}),
        ...usageFields(message),
        ...where,
      },
    });
    frames.push({
      type: "message.update",
      whole: true,
      payload: {
        message_id: id,
        text: message.text,
        ...(message.reasoning ? { reasoning: message.reasoning } : {}),
        ...usageFields(message),
        ...where,
      },
    });
    // The same frames the answer's devices saw live, so a client needs no other path (docs/PROTOCOL.md §14.3).
    for (const tool of message.tools ?? []) {
      const args = typeof tool.args === "string" ? { truncated_arguments: tool.args } : tool.args;
      frames.push({
        type: "tool.start",
        payload: { message_id: id, index: tool.index, name: tool.name, preview: tool.preview, args, ...where },
      });
      if (open.has(tool.index)) continue;
      frames.push({
        type: "tool.end",
        payload: {
          message_id: id,
          index: tool.index,
          name: tool.name,
          output: tool.output,
          duration: tool.duration,
          ok: tool.ok,
          ...where,
        },
      });
    }
  }
  if (!asking) frames.push({ type: "typing", payload: { on: true, ...where } });
  return frames;
}
