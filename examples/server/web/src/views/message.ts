// One message of the conversation as an <article>: meta line, reasoning, commentary, tool calls,
// the Markdown body, media and the runtime footer. A gateway command is one small line instead
// (docs/PROTOCOL.md §14.2); a message waiting in the lane's queue says so, with Cancel and Send now.
import type { MediaRef } from "chat-gateway";
import { formatBytes, formatTime, h, icon } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { footerParts, type FooterField } from "../settings.js";
import type { Msg } from "../msg.js";
import { answeredLineEl } from "./answered-line.js";
import { commandLabel } from "./command-line.js";
import { messageActionsEl, queuedActionsEl, type MessageActions } from "./message-actions.js";
import { toolEl } from "./tool-row.js";

/** What rendering a message needs besides the message. */
export interface MessageContext {
  /** Tool rows the user opened (`message_id:index`), kept open across re-renders. */
  openTools: Set<string>;
  footer: Set<FooterField>;
  actions: MessageActions;
  /** Whether a user message waits in the gateway's queue of its lane (docs/PROTOCOL.md §14.4). */
  queued(msg: Msg): boolean;
  /** This device's id: an answered card it answered says so. */
  ownDeviceId(): string | undefined;
  /** An image failed to load: maybe the session ended. */
  onMediaError(): void;
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
    : h(
        "a",
        { class: "media-file", href: url, download: m.filename },
        icon("file"),
        `${m.filename} (${formatBytes(m.size)})`,
      );
}

/** A gateway command (`/stop`, `/approve`, …) as one small line: who, what, when. */
function commandEl(msg: Msg): HTMLElement {
  return h(
    "p",
    {
      class: "msg command-line",
      id: `msg-${msg.message_id}`,
      tabindex: -1,
      dataset: { messageId: msg.message_id },
      title: msg.text,
    },
    h("span", { class: "command-what" }, commandLabel(msg.text)),
    h("span", { class: "command-who" }, " by you · "),
    h("time", { datetime: new Date(msg.ts).toISOString() }, formatTime(msg.ts)),
  );
}

export function messageEl(msg: Msg, ctx: MessageContext): HTMLElement {
  if (msg.command) return commandEl(msg);
  const queued = msg.role === "user" && ctx.queued(msg);
  const assistant = msg.role === "assistant";
  const status = msg.status && msg.status !== "complete" && msg.status !== "streaming" ? msg.status : undefined;
  const body = h("div", { class: "body md" });
  renderMarkdown(body, msg.text);
  const tools = msg.tools.map((t) => toolEl(msg, t, ctx.openTools));
  const media = msg.media.map((m) => mediaEl(m, ctx));
  const parts = assistant && !msg.streaming ? footerParts(msg.runtime, ctx.footer, msg) : [];
  return h(
    "article",
    {
      class: `msg ${msg.role}${msg.streaming ? " streaming" : ""}${status ? ` status-${status}` : ""}${queued ? " queued" : ""}`,
      id: `msg-${msg.message_id}`,
      tabindex: -1,
      dataset: { messageId: msg.message_id },
      "aria-label": assistant ? "Assistant" : "You",
    },
    h(
      "div",
      { class: "msg-meta" },
      h("span", { class: "who" }, assistant ? "Assistant" : "You"),
      h("time", { datetime: new Date(msg.ts).toISOString() }, formatTime(msg.ts)),
      status ? h("span", { class: `tag status` }, status) : null,
      queued ? h("span", { class: "tag queued-tag" }, "Queued") : null,
    ),
    msg.reasoning
      ? h(
          "details",
          { class: "reasoning" },
          h("summary", null, "Reasoning"),
          h("div", { class: "reasoning-text" }, msg.reasoning),
        )
      : null,
    msg.commentary.length
      ? h(
          "div",
          { class: "commentary" },
          msg.commentary.map((c) => h("p", null, c)),
        )
      : null,
    tools.length ? h("div", { class: "tools" }, tools) : null,
    msg.text || !msg.streaming || !tools.length ? body : null,
    media.length ? h("div", { class: "media" }, media) : null,
    msg.asks.length
      ? h(
          "div",
          { class: "answered" },
          msg.asks.map((a) => answeredLineEl(a, ctx.ownDeviceId())),
        )
      : null,
    parts.length
      ? h(
          "div",
          { class: "runtime-footer" },
          parts.map((p) => h("span", { title: p.title, dataset: { field: p.field } }, p.text)),
        )
      : null,
    queued ? queuedActionsEl(msg, ctx.actions) : msg.streaming ? null : messageActionsEl(msg, ctx.actions),
  );
}
