/**
 * The frames of asking the person (docs/PROTOCOL.md §11, an extension): the three picker frames,
 * `picker.resolved`, `commands.complete`, and the payloads of `picker.select` and
 * `commands.complete` requests. Types only.
 * @module
 */
import type { ChatId, MessageId } from "chat-gateway";
import type { LaneRef } from "./frames.js";

/** One choice of a picker. */
export interface PickerOption {
  id: string;
  label: string;
}

/** What every picker frame carries. */
export interface PickerBasePayload extends LaneRef {
  /** The ask's id, unique per owner; `picker.select` answers it. */
  picker_id: string;
  /** The assistant message whose turn asked. */
  message_id: MessageId;
  title: string;
  /** Epoch milliseconds; the gateway resolves the ask `expired` then. */
  expires_at: number;
}

/** `picker.approval`: approve or deny an action, usually a tool call with its full arguments. */
export interface PickerApprovalPayload extends PickerBasePayload {
  body: string;
  tool?: { name: string; args: Record<string, unknown> };
  /** Default `approve` and `deny`. */
  options: PickerOption[];
}

/** `picker.confirm`: a question; a clarification in the person's own words when `allow_text`. */
export interface PickerConfirmPayload extends PickerBasePayload {
  body: string;
  /** May be empty when `allow_text` is true. */
  options: PickerOption[];
  allow_text: boolean;
}

/** `picker.model`: choose the lane's model from now on; `picker.select`'s `option_id` is the model's `id`. */
export interface PickerModelPayload extends PickerBasePayload {
  models: { id: string; label: string; current?: boolean }[];
}

/** How an ask ended. */
export type PickerOutcome = "selected" | "expired" | "cancelled" | "interrupted";

/** `picker.resolved`: an ask ended (answered here or on another device, expired, cancelled, interrupted). */
export interface PickerResolvedPayload extends LaneRef {
  picker_id: string;
  outcome: PickerOutcome;
  option_id?: string;
  text?: string;
  /** The device that answered, for `selected`. */
  device_id?: string;
}

/** `picker.select`: the answer to an ask, an offered option and/or text. */
export interface PickerSelectInput {
  picker_id: string;
  option_id?: string;
  text?: string;
}

/** `commands.complete` request: complete a typed slash command in a lane. */
export interface CommandsCompleteInput {
  chat_id: ChatId;
  thread_id?: ChatId | null;
  text: string;
}

/** One completion: `value` is the whole completed line, e.g. `/model demo-fast`. */
export interface Completion {
  value: string;
  description: string;
}

/** `commands.complete` response: `text` echoes the request's. */
export interface CommandsCompletePayload {
  text: string;
  completions: Completion[];
}

/** The picker frames, by type. */
export interface PickerPayloads {
  "picker.approval": PickerApprovalPayload;
  "picker.confirm": PickerConfirmPayload;
  "picker.model": PickerModelPayload;
}

/** An ask still waiting for an answer, as the client tracks it: its frame's payload and its kind. */
export type OpenAsk =
  | ({ kind: "approval" } & PickerApprovalPayload)
  | ({ kind: "confirm" } & PickerConfirmPayload)
  | ({ kind: "model" } & PickerModelPayload);
