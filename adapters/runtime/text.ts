/**
 * Text both runtime bindings make the same way: abridged previews of tool calls, the note that
 * tells a model about an attachment it cannot open, and a title cleaned of what models add.
 * @module
 */
import type { TurnInput } from "chat-gateway";

/** Collapses whitespace and cuts to `max` characters, ending with `…` when cut. */
export function abridge(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The generic progress line of a tool call: `name(key=value, …)`, abridged. */
export function argsPreview(name: string, args: Record<string, unknown>): string {
  const parts = Object.entries(args).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return abridge(`${name}(${parts.join(", ")})`, 120);
}

/** The text followed by one line per attachment. */
export function withAttachmentNotes(text: string, media: TurnInput["message"]["media"]): string {
  // The model cannot open the files; telling it they exist keeps its answer sensible.
  const notes = media.map((m) => `[Attached ${m.kind}: ${m.filename} (${m.mime}, ${m.size} bytes)]`);
  return [text, ...notes].filter((s) => s !== "").join("\n");
}

/**
 * A model's answer to a title prompt reduced to a title: reasoning, a `Title:` label, quotes and
 * trailing punctuation removed; at most 6 words and 80 characters.
 */
export function cleanTitle(content: string): string {
  const withoutThinking = content.replace(/<think>[\s\S]*?<\/think>/g, "");
  const line =
    withoutThinking
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "") ?? "";
  const bare = line
    .replace(/^(title\s*:\s*)/i, "")
    .replace(/^["'“”‘’*#\s]+|["'“”‘’*\s]+$/g, "")
    .replace(/[.!?:;,]+$/, "");
  return bare.split(/\s+/).filter(Boolean).slice(0, 6).join(" ").slice(0, 80);
}
