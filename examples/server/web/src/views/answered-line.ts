// The small line an answered card leaves in the transcript: what was answered, by which device
// (docs/PROTOCOL.md §11: `picker.resolved` names the answering device).
import type { OpenAsk } from "chat-gateway/client";
import { formatTime, h } from "../dom.js";

export interface Resolution {
  outcome: "selected" | "expired" | "cancelled" | "interrupted";
  option_id?: string;
  text?: string;
  device_id?: string;
}

function chosenLabel(ask: OpenAsk, option: string): string {
  const options: Array<{ id: string; label: string }> = "models" in ask ? ask.models : "options" in ask ? ask.options : [];
  return options.find((o) => o.id === option)?.label ?? option;
}

/** "Approved", "Denied", "Answered: tea", "Model: Demo (fast)", or how the ask ended unanswered. */
export function resolutionText(ask: OpenAsk, r: Resolution): string {
  if (r.outcome !== "selected") return `“${ask.title}” ${r.outcome}`;
  if (ask.kind === "approval" && (r.option_id === "approve" || r.option_id === "deny")) return r.option_id === "approve" ? "Approved" : "Denied";
  if (r.text !== undefined) return `Answered: ${r.text}`;
  const label = r.option_id === undefined ? "" : chosenLabel(ask, r.option_id);
  return ask.kind === "model" ? `Model: ${label}` : `Answered: ${label}`;
}

/** The line: what, who (this device or another), when. */
export function answeredLineEl(ask: OpenAsk, r: Resolution, ownDeviceId: string | undefined): HTMLElement {
  const who = r.outcome !== "selected" ? "" : r.device_id === undefined ? " by you" : r.device_id === ownDeviceId ? " by you on this device" : " by you on another device";
  const now = Date.now();
  return h(
    "p",
    { class: "msg command-line answered-line", title: ask.title, dataset: { pickerId: ask.picker_id } },
    h("span", { class: "command-what" }, resolutionText(ask, r)),
    h("span", { class: "command-who" }, `${who} · `),
    h("time", { datetime: new Date(now).toISOString() }, formatTime(now)),
  );
}
