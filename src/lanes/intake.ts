/**
 * What a user message does in its lane (docs/PROTOCOL.md §4, §11, §14.4), decided before it is
 * stored and carried out after: `/stop` stops the lane's turn, an ask's command answers the
 * waiting ask beside the turn, anything else starts or queues a turn of its own.
 * @module
 */
import { answerByCommand } from "../asks/ask-answers.js";
import { isAskCommand, type AskCommand } from "../asks/ask-commands.js";
import type { StoredMessage } from "../contracts/records.js";
import type { Lane } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import type { ParsedCommand } from "../turn/commands.js";
import type { LaneTurn } from "../turn/lane-turn.js";
import { answerWaiting, builtinOf, type RunServices } from "./run.js";
import { checkWhenBusy, markForStart, startTurn, type WhenBusy } from "./start.js";
import { stopCommand } from "./stop.js";

/** What a message does once stored. */
export type Intake =
  | { readonly kind: "stop" }
  | { readonly kind: "ask"; readonly name: AskCommand; readonly args: string }
  | { readonly kind: "turn"; readonly whenBusy: WhenBusy | undefined };

/**
 * Decide what the message will do, and refuse, before anything is stored, a turn the lane cannot
 * take (the owner's capacity, a `when_busy` the runtime cannot honour). `/stop` and an ask's
 * answer act beside the running turn, so neither counts against capacity.
 */
export async function intakeOf(
  services: RunServices,
  owner: Owner,
  command: ParsedCommand | undefined,
  whenBusy: WhenBusy | undefined,
): Promise<Intake> {
  const builtin = command && (await builtinOf(services, command.name));
  if (builtin === "/stop") return { kind: "stop" };
  if (builtin && isAskCommand(builtin)) return { kind: "ask", name: builtin, args: command!.args };
  services.lanes.checkCapacity(owner);
  checkWhenBusy(services, whenBusy);
  return { kind: "turn", whenBusy };
}

/**
 * Mark the message for what it does, before it is stored with its echo: a turn's message is stored
 * as waiting (or goes to the running turn as a steer, returned here).
 */
export function markIntake(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  intake: Intake,
): LaneTurn | undefined {
  return intake.kind === "turn" ? markForStart(services, owner, lane, message, intake.whenBusy).steer : undefined;
}

/** Carry out what the stored message does; `deviceId` is the sender's, for an ask's answer. */
export async function actOnIntake(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  intake: Intake,
  steer: LaneTurn | undefined,
  deviceId: string,
): Promise<void> {
  if (intake.kind === "ask") {
    const answer = { name: intake.name, args: intake.args, replyTo: message.message_id, deviceId };
    answerByCommand(services, owner, lane, answer).catch((error) => services.log.warn(`${intake.name} failed`, error));
    return;
  }
  if (intake.kind === "stop") {
    void stopCommand(services, owner, lane, message);
    return;
  }
  await startTurn(services, owner, lane, message, steer, answerWaiting(services));
}
