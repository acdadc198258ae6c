/**
 * The slash commands that answer asks from any device, for devices without pickers
 * (docs/PROTOCOL.md §11): `/approve [picker_id]`, `/deny [picker_id]`, `/answer <text>`,
 * `/model <id>`. They act at once, beside the waiting turn, never queued behind it.
 * @module
 */
import type { AskServices } from "./ask-services.js";
import type { Owner } from "../protocol/ids.js";
import type { Ask } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import type { LaneTurn } from "../turn/lane-turn.js";
import { runAnswer } from "../turn/turn.js";
import { ASK_LIMITS, type PickerFrame, type PickerSpec, type Selection } from "./ask-shapes.js";

/** The ask commands by canonical name, with the kind of ask each answers. */
export const ASK_COMMAND_KINDS = {
  "/approve": "approval",
  "/deny": "approval",
  "/answer": "confirm",
  "/model": "model",
} as const satisfies Record<string, Ask["kind"]>;

/** A command that answers asks. */
export type AskCommand = keyof typeof ASK_COMMAND_KINDS;

/** True for the names of {@link ASK_COMMAND_KINDS}. */
export function isAskCommand(name: string): name is AskCommand {
  return Object.hasOwn(ASK_COMMAND_KINDS, name);
}

const KIND_NAMES: Record<Ask["kind"], string> = { approval: "approval", confirm: "question", model: "model choice" };

/** "There is no open approval here." */
export function noneOpen(kind: Ask["kind"]): string {
  return `There is no open ${KIND_NAMES[kind]} here.`;
}

/** True when the command's argument names the ask (`/approve <picker_id>`). */
export function namesPicker(name: AskCommand, args: string): boolean {
  return (name === "/approve" || name === "/deny") && args !== "";
}

/**
 * Why `/approve` without a picker id must not pick the newest approval (words for the person), or
 * undefined when it may: a device without cards approves what its notification showed, so the id
 * is needed when that was cut, or when another approval open in the lane could be the one meant.
 */
export function approvalNeedsId(
  spec: Pick<PickerSpec, "picker_id" | "noticeCut">,
  openInLane: readonly string[],
): string | undefined {
  if (spec.noticeCut)
    return `This approval's notification was cut, so it did not show everything it approves. Read it on a device with cards, or approve it by id: /approve ${spec.picker_id}.`;
  if (openInLane.length > 1)
    return `${openInLane.length} approvals are open here; approve one by id: ${openInLane.map((id) => `/approve ${id}`).join(", ")}.`;
  return undefined;
}

/** The selection a command makes on an ask, or why it cannot (words for the person). */
export function commandSelection(
  spec: Pick<PickerSpec, "choices" | "allow_text" | "kind">,
  name: AskCommand,
  args: string,
  labels: ReadonlyMap<string, string> = new Map(),
): Selection | string {
  const { choices } = spec;
  if (name === "/approve") return { option_id: choices.includes("approve") ? "approve" : choices[0] };
  if (name === "/deny") return { option_id: choices.includes("deny") ? "deny" : choices[choices.length - 1] };
  if (args === "")
    return name === "/model"
      ? `Choose a model: /model <id>, one of ${choices.join(", ")}.`
      : "Type your answer after /answer.";
  const wanted = args.toLowerCase();
  const option = choices.find((id) => id.toLowerCase() === wanted || labels.get(id)?.toLowerCase() === wanted);
  if (option) return { option_id: option };
  if (spec.allow_text)
    return args.length > ASK_LIMITS.textMax
      ? `An answer has at most ${ASK_LIMITS.textMax} characters.`
      : { text: args };
  return `Answer with one of: ${choices.join(", ")}.`;
}

/** The labels of a card's choices, by id. */
export function choiceLabels(payload: PickerFrame["payload"]): Map<string, string> {
  const list = "models" in payload ? payload.models : payload.options;
  return new Map(list.map((c) => [c.id, c.label]));
}

async function* note(text: string) {
  yield { type: "text" as const, delta: text };
}

/**
 * Answer a command with a short assistant message at once, beside a turn that may be waiting in
 * the lane for this very answer (so not queued behind it).
 */
export function replyBeside(
  services: AskServices,
  owner: Owner,
  lane: Lane,
  replyTo: string | undefined,
  text: string,
): Promise<unknown> {
  const turn: LaneTurn = { controller: new AbortController(), reason: undefined };
  return runAnswer(services, { owner, lane, turn, replyTo, push: false, events: () => note(text) });
}
