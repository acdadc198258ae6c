// One message of the conversation as an <article>: meta line, reasoning, commentary, tool calls,
// the Markdown body, media and the runtime footer.
import type { MediaRef } from "chat-gateway";
import { formatBytes, formatTime, h, icon } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { footerParts, type FooterField } from "../settings.js";
import type { Msg, ToolRow } from "../store.js";
import { messageActionsEl, type MessageActions } from "./message-actions.js";

/** What rendering a message needs besides the message. */
export interface MessageContext {
  /** Tool rows the user opened (`message_id:index`), kept open across re-renders. */
  openTools: Set<string>;
  footer: Set<FooterField>;
  actions: MessageActions;
  /** An image failed to load: maybe the session ended. */
  onMediaError(): void;
}

function stringify(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

function formatDuration(seconds: number): string {
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(1)} s`;
}

/** The state mark of a tool row: a spinner with "Running <name>…" until it ends, then ✓ or ✗. */
function toolState(t: ToolRow): Array<HTMLElement | string> {
  if (t.ok === undefined) return [h("span", { class: "spinner", "aria-hidden": "true" }), h("span", { class: "tool-running" }, "Running ", h("code", { class: "tool-name" }, t.name), "…")];
  return [
    h("span", { class: "tool-state", "aria-hidden": "true" }, t.ok ? "✓" : "✗"),
    h("span", { class: "visually-hidden" }, t.ok ? "Tool succeeded: " : "Tool failed: "),
    h("code", { class: "tool-name" }, t.name),
  ];
}

function toolEl(msg: Msg, t: ToolRow, ctx: MessageContext): HTMLElement {
  const key = `${msg.message_id}:${t.index}`;
  const done = t.ok !== undefined;
  const details = h(
    "details",
    { class: `tool ${done ? (t.ok ? "ok" : "failed") : "running"}`, open: ctx.openTools.has(key), dataset: { tool: t.name } },
    h(
      "summary",
      null,
      ...toolState(t),
      h("span", { class: "tool-preview" }, t.preview),
      done && t.duration !== undefined ? h("span", { class: "tool-duration" }, formatDuration(t.duration)) : null,
    ),
    h("div", { class: "tool-label" }, "Arguments"),
    h("pre", { class: "tool-args" }, stringify(t.args)),
    done ? h("div", { class: "tool-label" }, t.ok ? "Output" : "Error") : null,
    done ? h("pre", { class: "tool-output" }, stringify(t.output)) : null,
  );
  details.addEventListener("toggle", () => (details.open ? ctx.openTools.add(key) : ctx.openTools.delete(key)));
  return details;
}

function mediaEl(m: MediaRef, ctx: MessageContext): HTMLElement {
  const url = `/api/media/${encodeURIComponent(m.media_id)}`;
  return m.kind === "image"
    ? h(
        "a",
        { class: "media-image", href: url, target: "_blank", rel: "noopener noreferrer" },
        // A broken image may be a 401: the session ended.
        h("img", { src: url, alt: m.filename, loading: "lazy", onerror: () => ctx.onMediaError() }),
      )
    : h("a", { class: "media-file", href: url, download: m.filename }, icon("file"), `${m.filename} (${formatBytes(m.size)})`);
}

export function messageEl(msg: Msg, ctx: MessageContext): HTMLElement {
  const assistant = msg.role === "assistant";
  const status = msg.status && msg.status !== "complete" && msg.status !== "streaming" ? msg.status : undefined;
  const body = h("div", { class: "body md" });
  renderMarkdown(body, msg.text);
  const tools = msg.tools.map((t) => toolEl(msg, t, ctx));
  const media = msg.media.map((m) => mediaEl(m, ctx));
  const parts = assistant && !msg.streaming ? footerParts(msg.runtime, ctx.footer, msg) : [];
  return h(
    "article",
    { class: `msg ${msg.role}${msg.streaming ? " streaming" : ""}${status ? ` status-${status}` : ""}`, id: `msg-${msg.message_id}`, tabindex: -1, dataset: { messageId: msg.message_id }, "aria-label": assistant ? "Assistant" : "You" },
    h("div", { class: "msg-meta" }, h("span", { class: "who" }, assistant ? "Assistant" : "You"), h("time", { datetime: new Date(msg.ts).toISOString() }, formatTime(msg.ts)), status ? h("span", { class: `tag status` }, status) : null),
    msg.reasoning ? h("details", { class: "reasoning" }, h("summary", null, "Reasoning"), h("div", { class: "reasoning-text" }, msg.reasoning)) : null,
    msg.commentary.length ? h("div", { class: "commentary" }, msg.commentary.map((c) => h("p", null, c))) : null,
    tools.length ? h("div", { class: "tools" }, tools) : null,
    msg.text || !msg.streaming || !tools.length ? body : null,
    media.length ? h("div", { class: "media" }, media) : null,
    parts.length ? h("div", { class: "runtime-footer" }, parts.map((p) => h("span", { title: p.title, dataset: { field: p.field } }, p.text))) : null,
    msg.streaming ? null : messageActionsEl(msg, ctx.actions),
  );
}
