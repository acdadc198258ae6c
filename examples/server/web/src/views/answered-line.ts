// The small line an answered card leaves in the transcript, under the answer that asked: what was
// answered, by which device, when. Drawn from the answer's `asks` (docs/PROTOCOL.md §14.5), so it
// survives a reload and shows on every device; a live `picker.resolved` adds the same entry early.
import type { AnsweredAsk } from "chat-gateway";
import type { OpenAsk } from "chat-gateway/client";
import { formatTime, h } from "../dom.js";

/** What a live `picker.resolved` says (docs/PROTOCOL.md §11.2). */
export interface Resolution {
  picker_id: string;
  outcome: AnsweredAsk["outcome"];
  option_id?: string;
  text?: string;
  device_id?: string;
  device_name?: string;
}

/** The entry the gateway will keep on the answer, built from the card and its live outcome. */
export function answeredFromLive(ask: OpenAsk, r: Resolution): AnsweredAsk {
  const options: Array<{ id: string; label: string }> =
    "models" in ask ? ask.models : "options" in ask ? ask.options : [];
  const entry: AnsweredAsk = {
    picker_id: ask.picker_id,
    kind: ask.kind,
    title: ask.title,
    outcome: r.outcome,
    ts: Date.now(),
  };
  if (r.option_id !== undefined) entry.option_id = r.option_id;
  const label = options.find((o) => o.id === r.option_id)?.label;
  if (label !== undefined) entry.label = label;
  if (r.text !== undefined) entry.text = r.text;
  if (r.outcome === "selected" && r.device_id) entry.device_id = r.device_id;
  if (r.outcome === "selected" && r.device_name) entry.device_name = r.device_name;
  return entry;
}

/** "Approved", "Denied", "Answered: tea", "Chose: Demo (fast)", or how the ask ended unanswered. */
export function resolutionText(a: AnsweredAsk): string {
  if (a.outcome !== "selected") return `“${a.title}” ${a.outcome}`;
  if (a.kind === "approval" && (a.option_id === "approve" || a.option_id === "deny"))
    return a.option_id === "approve" ? "Approved" : "Denied";
  if (a.text !== undefined) return `Answered: ${a.text}`;
  const label = a.label ?? a.option_id ?? "";
  return a.kind === "model" ? `Chose: ${label}` : `Answered: ${label}`;
}

/** " by Pixel 8", " by this device", " by another device"; nothing for an ask nobody answered. */
function whoText(a: AnsweredAsk, ownDeviceId: string | undefined): string {
  if (a.outcome !== "selected") return "";
  const own = a.device_id !== undefined && a.device_id === ownDeviceId;
  if (a.device_name) return ` by ${a.device_name}${own ? " (this device)" : ""}`;
  if (a.device_id === undefined) return "";
  return own ? " by this device" : " by another device";
}

/** The line: what, who, when. */
export function answeredLineEl(a: AnsweredAsk, ownDeviceId: string | undefined): HTMLElement {
  return h(
    "p",
    { class: "command-line answered-line", title: a.title, dataset: { pickerId: a.picker_id } },
    h("span", { class: "command-what" }, resolutionText(a)),
    h("span", { class: "command-who" }, `${whoText(a, ownDeviceId)} · `),
    h("time", { datetime: new Date(a.ts).toISOString() }, formatTime(a.ts)),
  );
}
