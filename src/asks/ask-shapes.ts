/**
 * What an ask looks like on the wire (docs/PROTOCOL.md §11): the runtime's request checked and
 * bounded, then the picker frame, the `notification` for devices without pickers, the push and
 * the `picker.resolved` frame built from it.
 * @module
 */
import type { ApprovalAsk, Ask, AskAnswer, AskOption, ConfirmAsk, ModelAsk } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import type { ServerFrame, StoredFrame } from "../protocol/protocol.js";
import type { ServerPayloads } from "../protocol/server-frames.js";
import type { AskOffer } from "../push/action-tokens.js";
import type { PushMessage } from "../contracts/push.js";
import type { AnsweredAsk } from "../contracts/records.js";
import { clip } from "../support/clip.js";

/** Bounds of an ask (docs/PROTOCOL.md §11); longer text is cut, more choices are refused. */
export const ASK_LIMITS = {
  titleMax: 200,
  bodyMax: 4000,
  optionsMax: 20,
  optionIdMax: 64,
  labelMax: 200,
  modelsMax: 50,
  /** Longest `text` answer, characters (`hello.ok.limits.picker_text_max`). */
  textMax: 4000,
  /** Asks open at once in one lane and for one owner; one more is cancelled at once. */
  openPerLane: 4,
  openPerOwner: 16,
  /** Most of a tool call's arguments an approval card shows, bytes of JSON; the rest is cut, and the card says so. */
  toolArgsMaxBytes: 64 * 1024,
  /** Longest life of an ask (24 h), whatever the runtime asks for. */
  expiresMaxMs: 24 * 60 * 60 * 1000,
} as const;

/** An ask as the gateway keeps it while it is open, and as the stored picker frame shows it. */
export interface PickerSpec extends Lane {
  picker_id: string;
  kind: Ask["kind"];
  message_id: string;
  title: string;
  body: string;
  /** The option ids (model ids for a model ask) an answer may name. */
  choices: string[];
  allow_text: boolean;
  expires_at: number;
  /** The stored picker frame that shows the ask. */
  frame: PickerFrame;
  /** The body of the notification and push for devices without cards (see {@link notificationBody}). */
  notice: string;
  /** True when {@link PickerSpec.notice} had to be cut: `/approve` then needs the picker id. */
  noticeCut: boolean;
}

/** The card of an open ask: `picker.approval`, `picker.confirm` or `picker.model`. */
export type PickerFrame = ServerFrame<(typeof PICKER_TYPES)[keyof typeof PICKER_TYPES]>;

/** The picker frame type of each ask kind. */
export const PICKER_TYPES = { approval: "picker.approval", confirm: "picker.confirm", model: "picker.model" } as const;

function cut(text: unknown, max: number): string {
  return clip(typeof text === "string" ? text : "", max);
}

function checkChoices(list: unknown, where: string, max: number): AskOption[] {
  if (!Array.isArray(list)) throw new TypeError(`ask: ${where} must be an array`);
  if (list.length > max) throw new TypeError(`ask: at most ${max} ${where}`);
  const seen = new Set<string>();
  return list.map((choice: Partial<AskOption>) => {
    const id = choice?.id;
    if (typeof id !== "string" || id === "" || id.length > ASK_LIMITS.optionIdMax || /\s/.test(id)) {
      throw new TypeError(
        `ask: each of ${where} needs an id of 1 to ${ASK_LIMITS.optionIdMax} characters without spaces`,
      );
    }
    if (seen.has(id)) throw new TypeError(`ask: ${where} has the id "${id}" twice`);
    seen.add(id);
    return { id, label: cut(choice.label ?? id, ASK_LIMITS.labelMax) };
  });
}

/**
 * The arguments an approval card shows: all of them when their JSON is within
 * `ASK_LIMITS.toolArgsMaxBytes`, else the first entries that fit (a long string cut with `…`) and
 * a note saying how much there was.
 */
function shownArgs(args: unknown): { args: Record<string, unknown>; note?: string } {
  const record =
    args !== null && typeof args === "object" && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
  const max = ASK_LIMITS.toolArgsMaxBytes;
  const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? "null");
  let total: number;
  try {
    total = size(record);
  } catch {
    return { args: {}, note: "The call's arguments cannot be shown (they are not JSON)." };
  }
  if (total <= max) return { args: record };
  const kept: Record<string, unknown> = {};
  let used = 2;
  for (const [key, value] of Object.entries(record)) {
    const room = max - used - size(key) - 2;
    if (room <= 0) break;
    if (size(value) > room) {
      if (typeof value === "string") kept[key] = cutToBytes(value, room);
      break;
    }
    kept[key] = value;
    used += size(key) + size(value) + 2;
  }
  return {
    args: kept,
    note: `The call's arguments are ${Math.ceil(total / 1024)} KiB of JSON; only the first ${max / 1024} KiB are shown.`,
  };
}

/** `text` cut so that its JSON takes at most `bytes`, ending with `…`. */
function cutToBytes(text: string, bytes: number): string {
  for (let end = Math.min(text.length, bytes); ; ) {
    const cut = `${text.slice(0, end)}…`;
    const size = Buffer.byteLength(JSON.stringify(cut));
    if (size <= bytes || end === 0) return cut;
    end = Math.min(end - 1, Math.floor((end * bytes) / size));
  }
}

const DEFAULT_APPROVAL: AskOption[] = [
  { id: "approve", label: "Approve" },
  { id: "deny", label: "Deny" },
];

/** Where an ask opens: its lane, picker id, message and deadline. */
type AskPlace = Lane & { picker_id: string; message_id: string; expires_at: number };

/** The fields every open ask and its card share. */
type CardCommon = Pick<PickerSpec, "picker_id" | "chat_id" | "thread_id" | "message_id" | "title">;

/**
 * Check a runtime's ask and build the open ask. Throws TypeError for a request the protocol cannot
 * show (no choice at all, bad ids, too many); text that is too long is cut.
 */
export function pickerSpec(request: Ask, at: AskPlace): PickerSpec {
  if (!request || typeof request !== "object") throw new TypeError("ask: the request must be an object");
  const title = cut(request.title, ASK_LIMITS.titleMax);
  const base = {
    picker_id: at.picker_id,
    chat_id: at.chat_id,
    thread_id: at.thread_id,
    message_id: at.message_id,
    title,
  };
  if (request.kind === "model") return modelSpec(request, base, at.expires_at);
  if (request.kind === "approval") return approvalSpec(request, base, at.expires_at);
  if (request.kind === "confirm") return confirmSpec(request, base, at.expires_at);
  throw new TypeError(`ask: unknown kind ${JSON.stringify((request as { kind?: unknown }).kind)}`);
}

/** A model ask: the models offered, the current one marked; its notice is the title alone. */
function modelSpec(request: ModelAsk, base: CardCommon, expiresAt: number): PickerSpec {
  const models = checkChoices(request.models, "models", ASK_LIMITS.modelsMax);
  if (models.length === 0) throw new TypeError("ask: a model ask needs at least one model");
  const shown = models.map((m, i) => (request.models[i]?.current ? { ...m, current: true as const } : m));
  const frame: PickerFrame = { type: "picker.model", payload: { ...base, models: shown, expires_at: expiresAt } };
  return {
    ...base,
    kind: "model",
    body: "",
    choices: models.map((m) => m.id),
    allow_text: false,
    expires_at: expiresAt,
    frame,
    notice: base.title,
    noticeCut: false,
  };
}

/** An approval: its options (approve and deny by default) and the tool call it approves, if any. */
function approvalSpec(request: ApprovalAsk, base: CardCommon, expiresAt: number): PickerSpec {
  const body = cut(request.body, ASK_LIMITS.bodyMax);
  const options =
    request.options === undefined ? DEFAULT_APPROVAL : checkChoices(request.options, "options", ASK_LIMITS.optionsMax);
  if (options.length === 0) throw new TypeError("ask: an approval needs at least one option");
  const shown = request.tool ? shownArgs(request.tool.args) : undefined;
  const tool = request.tool
    ? {
        name: cut(request.tool.name, ASK_LIMITS.labelMax),
        args: shown!.args,
        ...(shown!.note ? { args_cut: true as const } : {}),
      }
    : undefined;
  // The person must know they do not see the whole call; the note survives the body's cut.
  const said = shown?.note ? `${cut(request.body, ASK_LIMITS.bodyMax - shown.note.length - 2)}\n\n${shown.note}` : body;
  const frame: PickerFrame = {
    type: "picker.approval",
    payload: { ...base, body: said, ...(tool ? { tool } : {}), options, expires_at: expiresAt },
  };
  const { notice, noticeCut } = notificationBody(said || base.title, tool, base.picker_id);
  return {
    ...base,
    kind: "approval",
    body: said,
    choices: options.map((o) => o.id),
    allow_text: false,
    expires_at: expiresAt,
    frame,
    notice,
    noticeCut,
  };
}

/** A confirm: options, free text, or both. */
function confirmSpec(request: ConfirmAsk, base: CardCommon, expiresAt: number): PickerSpec {
  const body = cut(request.body, ASK_LIMITS.bodyMax);
  const options = checkChoices(request.options ?? [], "options", ASK_LIMITS.optionsMax);
  const allowText = request.allowText === true;
  if (options.length === 0 && !allowText) throw new TypeError("ask: a confirm needs options or allowText");
  const frame: PickerFrame = {
    type: "picker.confirm",
    payload: { ...base, body, options, allow_text: allowText, expires_at: expiresAt },
  };
  return {
    ...base,
    kind: "confirm",
    body,
    choices: options.map((o) => o.id),
    allow_text: allowText,
    expires_at: expiresAt,
    frame,
    notice: body || base.title,
    noticeCut: false,
  };
}

/** `JSON.stringify`, or what `String` makes of a value JSON cannot hold (a cycle, a BigInt). */
function argsText(args: unknown): string {
  try {
    return JSON.stringify(args, null, 1) ?? String(args);
  } catch {
    return String(args);
  }
}

/**
 * The notification body of an approval: the runtime's body (often a short preview), then the tool
 * and its full arguments, within the body bound. A device without cards approves what this
 * shows, so when the arguments do not fit it says so, and `/approve` then needs the picker id
 * (docs/PROTOCOL.md §11.1).
 */
export function notificationBody(
  shown: string,
  tool: { name: string; args: unknown } | undefined,
  pickerId: string,
): { notice: string; noticeCut: boolean } {
  if (!tool) return { notice: shown, noticeCut: false };
  const full = `${shown}\n\n${tool.name} arguments: ${argsText(tool.args)}`;
  if (full.length <= ASK_LIMITS.bodyMax) return { notice: full, noticeCut: false };
  const note = `\n[cut: the arguments are longer than this notification; read them on a device with cards, or approve anyway with /approve ${pickerId}]`;
  return { notice: `${full.slice(0, ASK_LIMITS.bodyMax - note.length - 1)}…${note}`, noticeCut: true };
}

/** The notification kind of an ask: `approval`, else `clarify`. */
export function notificationKind(spec: Pick<PickerSpec, "kind">): "approval" | "clarify" {
  return spec.kind === "approval" ? "approval" : "clarify";
}

/** The frames stored when an ask opens: the card, then the notification for devices without pickers. */
export function openingFrames(spec: PickerSpec, now: number): StoredFrame[] {
  const notification = {
    kind: notificationKind(spec),
    title: spec.title,
    body: spec.notice,
    ts: now,
    chat_id: spec.chat_id,
    thread_id: spec.thread_id,
    picker_id: spec.picker_id,
  };
  return [spec.frame, { type: "notification", payload: notification }];
}

/** The push for a device with no connection: the question as the body. */
export function askPush(spec: PickerSpec): PushMessage {
  return {
    kind: "notification",
    notification_kind: notificationKind(spec),
    title: spec.title,
    body: spec.notice,
    chat_id: spec.chat_id,
    thread_id: spec.thread_id,
    picker_id: spec.picker_id,
  };
}

/** What an ask's push offers as buttons (docs/PROTOCOL.md §21): its options, or its models. */
export function askOffer(spec: PickerSpec): AskOffer {
  const shown = spec.frame.payload;
  const options = "models" in shown ? shown.models : shown.options;
  return { options: options.map(({ id, label }) => ({ id, label })), expires_at: spec.expires_at };
}

/** The `picker.resolved` frame of an outcome. */
export function resolvedFrame(spec: Lane & { picker_id: string }, answer: AskAnswer, deviceId?: string): StoredFrame {
  const payload: ServerPayloads["picker.resolved"] = {
    picker_id: spec.picker_id,
    chat_id: spec.chat_id,
    thread_id: spec.thread_id,
    outcome: answer.outcome,
  };
  if (answer.option_id !== undefined) payload.option_id = answer.option_id;
  if (answer.text !== undefined) payload.text = answer.text;
  if (deviceId !== undefined) payload.device_id = deviceId;
  return { type: "picker.resolved", payload };
}

/** The record of how an ask ended, kept on its answer (docs/PROTOCOL.md §14.5). */
export function answeredAsk(
  spec: PickerSpec,
  answer: AskAnswer,
  deviceId: string | undefined,
  now: number,
): AnsweredAsk {
  const record: AnsweredAsk = {
    picker_id: spec.picker_id,
    kind: spec.kind,
    title: spec.title,
    outcome: answer.outcome,
    ts: now,
  };
  if (answer.option_id !== undefined) {
    record.option_id = answer.option_id;
    const shown = spec.frame.payload;
    const offered: ReadonlyArray<{ id: string; label: string }> = "models" in shown ? shown.models : shown.options;
    const label = offered.find((o) => o.id === answer.option_id)?.label;
    if (label !== undefined) record.label = label;
  }
  if (answer.text !== undefined) record.text = answer.text;
  if (deviceId && answer.outcome === "selected") record.device_id = deviceId;
  return record;
}

/** What a person may answer: one of the choices, or text where the ask allows it. */
export interface Selection {
  option_id?: string;
  text?: string;
}

/**
 * Why a selection does not fit the ask (`unsupported`), or undefined when it fits. An option
 * that was not offered, text where it is not allowed or too long, or neither.
 */
export function selectionProblem(
  spec: Pick<PickerSpec, "choices" | "allow_text">,
  selection: Selection,
): string | undefined {
  const { option_id: optionId, text } = selection;
  if (optionId === undefined && text === undefined) return "picker.select needs option_id or text";
  if (optionId !== undefined && !spec.choices.includes(optionId))
    return `option "${cut(optionId, 64)}" is not offered; choose one of: ${spec.choices.join(", ")}`;
  if (text !== undefined && !spec.allow_text) return "this ask takes no text answer; choose one of its options";
  if (text !== undefined && text.length > ASK_LIMITS.textMax)
    return `a text answer has at most ${ASK_LIMITS.textMax} characters`;
  return undefined;
}
