// One tool call of an answer as a folding row: its name once, then its arguments and output as
// text (strings as they are, not JSON-escaped), long ones collapsed behind "Show all". Rows come
// from the live frames and from the answer's stored `tools` alike (docs/PROTOCOL.md §14.1).
import { h } from "../dom.js";
import type { Msg, ToolRow } from "../msg.js";

/** Text longer than this (characters or lines) starts collapsed. */
const LONG_CHARS = 600;
const LONG_LINES = 12;

/** A value as readable text: a string as it is, anything else as indented JSON. */
export function readable(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Arguments as `name: value` lines, each value readable; a cut argument text as it is. */
export function readableArgs(args: Record<string, unknown> | string): string {
  if (typeof args === "string") return args;
  const entries = Object.entries(args);
  if (entries.length === 0) return "(none)";
  return entries.map(([key, value]) => `${key}: ${readable(value).replace(/\n/g, "\n  ")}`).join("\n");
}

function formatDuration(seconds: number): string {
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(1)} s`;
}

/** A <pre> of a text, collapsed with a "Show all" button when it is long. */
function textBlock(cls: string, text: string): HTMLElement {
  const lines = text.split("\n").length;
  const pre = h("pre", { class: cls }, text);
  if (text.length <= LONG_CHARS && lines <= LONG_LINES) return pre;
  pre.classList.add("collapsed");
  const toggle = h(
    "button",
    { type: "button", class: "link tool-more", "aria-expanded": "false" },
    `Show all (${lines} lines)`,
  );
  toggle.addEventListener("click", () => {
    const open = pre.classList.toggle("collapsed") === false;
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Show less" : `Show all (${lines} lines)`;
  });
  return h("div", { class: "tool-block" }, pre, toggle);
}

/** The state mark and the name, once: a spinner while running, then ✓ or ✗. */
function toolState(t: ToolRow): Array<HTMLElement | string> {
  const name = h("code", { class: "tool-name" }, t.name);
  if (t.ok === undefined)
    return [
      h("span", { class: "spinner", "aria-hidden": "true" }),
      h("span", { class: "tool-running" }, "Running ", name, "…"),
    ];
  return [
    h("span", { class: "tool-state", "aria-hidden": "true" }, t.ok ? "✓" : "✗"),
    h("span", { class: "visually-hidden" }, t.ok ? "Tool succeeded: " : "Tool failed: "),
    name,
  ];
}

/** The preview without the tool's name in front (the row shows the name already), a quoted string unquoted. */
function previewWithoutName(t: ToolRow): string {
  const rest = t.preview.startsWith(`${t.name} `)
    ? t.preview.slice(t.name.length + 1)
    : t.preview === t.name
      ? ""
      : t.preview;
  if (!rest.startsWith('"')) return rest;
  try {
    const text: unknown = JSON.parse(rest);
    return typeof text === "string" ? text.replace(/\s+/g, " ") : rest;
  } catch {
    return rest;
  }
}

export function toolEl(msg: Msg, t: ToolRow, openTools: Set<string>): HTMLElement {
  const key = `${msg.message_id}:${t.index}`;
  const done = t.ok !== undefined;
  const details = h(
    "details",
    {
      class: `tool ${done ? (t.ok ? "ok" : "failed") : "running"}`,
      open: openTools.has(key),
      dataset: { tool: t.name },
    },
    h(
      "summary",
      null,
      ...toolState(t),
      h("span", { class: "tool-preview" }, previewWithoutName(t)),
      done && t.duration !== undefined ? h("span", { class: "tool-duration" }, formatDuration(t.duration)) : null,
    ),
    h("div", { class: "tool-label" }, "Arguments"),
    textBlock("tool-args", readableArgs(t.args)),
    done ? h("div", { class: "tool-label" }, t.ok ? "Output" : "Error") : null,
    done
      ? textBlock("tool-output", t.output === null || t.output === undefined ? "(no output)" : readable(t.output))
      : null,
    t.truncated ? h("p", { class: "tool-truncated" }, "Cut to 16 KiB by the gateway.") : null,
  );
  details.addEventListener("toggle", () => (details.open ? openTools.add(key) : openTools.delete(key)));
  return details;
}
