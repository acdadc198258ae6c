// Per-device settings, kept in localStorage: which runtime footer fields to show, and streaming.
import type { RuntimeInfo } from "chat-gateway";

export type FooterField = "model" | "tokens" | "context_pct" | "cwd" | "latency" | "cost";

export const FOOTER_FIELDS: Array<{ field: FooterField; label: string }> = [
  { field: "model", label: "Model" },
  { field: "tokens", label: "Tokens" },
  { field: "context_pct", label: "Context %" },
  { field: "cwd", label: "Working directory" },
  { field: "latency", label: "Latency" },
  { field: "cost", label: "Cost" },
];

const FOOTER_KEY = "chat-gateway:footer-fields";
const STREAMING_KEY = "chat-gateway:streaming";

function read(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function write(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    // Private mode: the setting lasts for this page only.
  }
}

export function footerFields(): Set<FooterField> {
  const raw = read(FOOTER_KEY);
  if (raw === null) return new Set(FOOTER_FIELDS.map((f) => f.field));
  try {
    const list = JSON.parse(raw) as unknown;
    return new Set(
      Array.isArray(list) ? (list.filter((f) => FOOTER_FIELDS.some((d) => d.field === f)) as FooterField[]) : [],
    );
  } catch {
    return new Set(FOOTER_FIELDS.map((f) => f.field));
  }
}

export function setFooterFields(fields: Set<FooterField>): void {
  write(FOOTER_KEY, JSON.stringify([...fields]));
}

export function streamingSetting(): boolean {
  return read(STREAMING_KEY) !== "false";
}

export function setStreamingSetting(on: boolean): void {
  write(STREAMING_KEY, String(on));
}

/** What a footer shows besides the runtime object: the `model` and `tokens` fields of the message. */
export interface FooterExtras {
  model?: string;
  tokens?: number;
}

/** The footer text parts of a runtime object, in order, for the fields shown. */
export function footerParts(
  runtime: RuntimeInfo | undefined,
  shown: Set<FooterField>,
  extras: FooterExtras = {},
): Array<{ field: FooterField; text: string; title: string }> {
  if (!runtime && extras.tokens === undefined) return [];
  runtime ??= {};
  const parts: Array<{ field: FooterField; text: string; title: string }> = [];
  const model = runtime.model ?? extras.model;
  if (shown.has("model") && model) parts.push({ field: "model", text: model, title: "Model" });
  if (shown.has("tokens") && extras.tokens !== undefined)
    parts.push({
      field: "tokens",
      text: `${extras.tokens.toLocaleString("en-US")} tokens`,
      title: "Tokens used by the answer",
    });
  if (shown.has("context_pct") && runtime.context_pct !== undefined)
    parts.push({
      field: "context_pct",
      text: `${runtime.context_pct < 1 ? "<1" : Math.round(runtime.context_pct)}% context`,
      title: "Context used",
    });
  if (shown.has("cwd") && runtime.cwd) parts.push({ field: "cwd", text: runtime.cwd, title: "Working directory" });
  if (shown.has("latency") && runtime.latency !== undefined)
    parts.push({ field: "latency", text: `${runtime.latency.toFixed(1)} s`, title: "Latency" });
  if (shown.has("cost") && runtime.cost !== undefined)
    parts.push({ field: "cost", text: `$${runtime.cost.toFixed(4)}`, title: "Cost" });
  return parts;
}
