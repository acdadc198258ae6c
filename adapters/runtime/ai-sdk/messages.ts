/**
 * The messages of a turn's first `streamText` call: the history, its tool calls and results
 * included, and the user's message with its attachments, as images the model sees (with `vision`)
 * or as lines of text.
 * @module
 */
import type { ModelMessage } from "ai";
import type { TurnInput } from "chat-gateway";
import { withAttachmentNotes } from "../text.js";
import { pastToolCalls } from "../tool-history.js";
import type { AiSdkRuntimeOptions } from "./options.js";

/** Builds the messages of a turn. */
export async function buildMessages(options: AiSdkRuntimeOptions, input: TurnInput): Promise<ModelMessage[]> {
  const messages: ModelMessage[] = [];
  for (const item of input.history) {
    const calls = pastToolCalls(item);
    if (calls.length > 0) {
      messages.push({
        role: "assistant",
        content: calls.map((c) => ({ type: "tool-call" as const, toolCallId: c.id, toolName: c.name, input: c.args })),
      });
      messages.push({
        role: "tool",
        content: calls.map((c) => ({
          type: "tool-result" as const,
          toolCallId: c.id,
          toolName: c.name,
          output: c.ok ? { type: "text" as const, value: c.result } : { type: "error-text" as const, value: c.result },
        })),
      });
    }
    const text = withAttachmentNotes(item.text, item.media);
    if (text !== "") messages.push({ role: item.role, content: text });
  }
  const { text, media } = input.message;
  const images = options.vision ? media.filter((m) => m.kind === "image") : [];
  const userText = withAttachmentNotes(
    text,
    media.filter((m) => !images.includes(m)),
  );
  if (images.length === 0) {
    messages.push({ role: "user", content: userText });
  } else {
    const content: Array<{ type: "text"; text: string } | { type: "image"; image: Uint8Array; mediaType: string }> = [];
    if (userText !== "") content.push({ type: "text", text: userText });
    for (const image of images)
      content.push({ type: "image", image: await input.readMedia(image.media_id), mediaType: image.mime });
    messages.push({ role: "user", content });
  }
  return messages;
}
