/**
 * The messages of a turn's first request: the system prompt, the history, and the user's message
 * with its attachments, as images the model sees (with `vision`) or as lines of text.
 * @module
 */
import type { TurnInput } from "chat-gateway";
import { withAttachmentNotes } from "../text.js";
import { pastToolCalls } from "../tool-history.js";
import type { ToolCallWire } from "./chunks.js";

/** A message of the Chat Completions API. */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null | Array<Record<string, unknown>>;
  tool_calls?: ToolCallWire[];
  tool_call_id?: string;
}

/** Builds the request messages of a turn. */
export async function buildMessages(
  cfg: { systemPrompt?: string; vision: boolean },
  input: TurnInput,
): Promise<ChatMessage[]> {
  const messages: ChatMessage[] = [];
  if (cfg.systemPrompt) messages.push({ role: "system", content: cfg.systemPrompt });
  for (const item of input.history) {
    const calls = pastToolCalls(item);
    if (calls.length > 0) {
      messages.push({
        role: "assistant",
        content: null,
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify(c.args) },
        })),
      });
      for (const call of calls) messages.push({ role: "tool", tool_call_id: call.id, content: call.result });
    }
    const text = withAttachmentNotes(item.text, item.media);
    if (text === "") continue;
    messages.push({ role: item.role, content: text });
  }
  const { text, media } = input.message;
  const images = cfg.vision ? media.filter((m) => m.kind === "image") : [];
  const described = media.filter((m) => !images.includes(m));
  const userText = withAttachmentNotes(text, described);
  if (images.length === 0) {
    messages.push({ role: "user", content: userText });
  } else {
    const parts: Array<Record<string, unknown>> = [];
    if (userText !== "") parts.push({ type: "text", text: userText });
    for (const image of images) {
      const bytes = await input.readMedia(image.media_id);
      parts.push({
        type: "image_url",
        image_url: { url: `data:${image.mime};base64,${Buffer.from(bytes).toString("base64")}` },
      });
    }
    messages.push({ role: "user", content: parts });
  }
  return messages;
}
