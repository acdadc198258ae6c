/**
 * How an answer reaches its ask (docs/PROTOCOL.md §11): `picker.select` and the answering slash
 * commands, from a device of this process or relayed from another. The process holding the ask
 * decides; without one, the stored cards say what stands, and an ask whose turn died closes as
 * `interrupted`.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import type { AskServices } from "./ask-services.js";
import type { Respondent } from "../outbox/outbox.js";
import type { Owner } from "../protocol/ids.js";
import type { Lane } from "../contracts/storage.js";
import { laneKey } from "../turn/lane-turn.js";
import type { OpenAsk } from "./open-asks.js";
import { resolvedFrame, selectionProblem, type Selection } from "./ask-shapes.js";
import { findPicker, openPickersOf, type StoredPicker } from "./picker-lookup.js";
import { relay, selected, type RelayedAnswer } from "./ask-relay.js";
import {
  approvalNeedsId,
  ASK_COMMAND_KINDS,
  choiceLabels,
  commandSelection,
  namesPicker,
  noneOpen,
  replyBeside,
  type AskCommand,
} from "./ask-commands.js";

type RespondTo = Respondent;

/**
 * Resolve an ask held here with a relayed or local answer. Resolves with why the answer does not
 * fit (the ask stays open), or undefined once it is resolved.
 */
export async function arbitrate(
  services: AskServices,
  entry: OpenAsk,
  answer: RelayedAnswer,
  respondTo?: RespondTo,
): Promise<string | undefined> {
  let selection: Selection = answer.selection ?? {};
  if (answer.command) {
    if (answer.command.name === "/approve" && answer.picker_id === undefined) {
      const refused = approvalNeedsId(
        entry.spec,
        services.asks.inLane(entry.owner, entry.spec, "approval").map((a) => a.spec.picker_id),
      );
      if (refused) return refused;
    }
    const made = commandSelection(
      entry.spec,
      answer.command.name as AskCommand,
      answer.command.args,
      choiceLabels(entry.spec.frame.payload),
    );
    if (typeof made === "string") return made;
    selection = made;
  }
  const problem = selectionProblem(entry.spec, selection);
  if (problem) return problem;
  await services.asks.resolve(entry.owner, entry.spec.picker_id, selected(selection), answer.device_id, respondTo);
  return undefined;
}

/** The arbiter's side of a relayed answer: resolve it, or tell the sender why not. */
export async function arbitrateRelayed(
  services: AskServices,
  entry: OpenAsk,
  answer: RelayedAnswer,
  respondTo: RespondTo | undefined,
): Promise<void> {
  const problem = await arbitrate(services, entry, answer, respondTo);
  if (!problem) return;
  if (answer.command) await replyBeside(services, entry.owner, entry.spec, undefined, problem);
  else
    respondTo?.session.respond(
      { type: "error", payload: { code: "unsupported", message: problem } },
      respondTo.requestId,
    );
}

/**
 * Close an ask that no process holds: its turn is gone (a crash), so it ends `interrupted`. With a
 * lane lock the lane must be free, or the turn still runs elsewhere.
 */
async function closeAbandoned(
  services: AskServices,
  owner: Owner,
  picker: StoredPicker,
  respondTo?: RespondTo,
): Promise<Record<string, unknown>> {
  const lock = services.options.laneLock;
  let lease: { release(): Promise<void> } | undefined;
  if (lock) {
    try {
      lease = await lock.acquire(laneKey(owner, picker), AbortSignal.timeout(200));
    } catch {
      throw new GatewayError("rate_limited", "the turn that asked is busy in another process; try again");
    }
  }
  try {
    const frame = resolvedFrame(picker, { outcome: "interrupted" });
    await services.store(owner, {}, [frame], respondTo);
    return frame.payload;
  } finally {
    await lease?.release().catch(() => undefined);
  }
}

/** Handle `picker.select`: the response is `picker.resolved`, with the outcome that stands. */
export async function selectPicker(
  services: AskServices,
  session: Respondent["session"] & { owner: Owner; device: { device_id: string } },
  payload: ClientPayloads["picker.select"],
  requestId: string | undefined,
): Promise<void> {
  const owner = session.owner;
  const id = payload.picker_id;
  const selection: Selection = {};
  if (payload.option_id !== undefined) selection.option_id = payload.option_id;
  if (payload.text !== undefined) selection.text = payload.text;
  const respondTo = { session, requestId };
  const answer: RelayedAnswer = {
    picker_id: id,
    selection,
    device_id: session.device.device_id,
    connection_id: session.id,
    request_id: requestId,
  };
  const held = services.asks.get(owner, id);
  if (held) {
    const problem = await arbitrate(services, held, answer, respondTo);
    if (problem) throw new GatewayError("unsupported", problem);
    return;
  }
  const standing = services.asks.standing(owner, id);
  if (standing) return session.respond({ type: "picker.resolved", payload: await standing }, requestId);
  if (services.options.laneLock) {
    // Resolved elsewhere meanwhile: the stored outcome answers as soon as it is there.
    const relayed = await relay(services, owner, answer, async () => (await findPicker(services, owner, id))?.resolved);
    if (relayed === true) return;
    if (relayed) return session.respond({ type: "picker.resolved", payload: relayed }, requestId);
  }
  const record = await findPicker(services, owner, id);
  if (!record) throw new GatewayError("not_found", `unknown picker_id "${id.slice(0, 80)}"`);
  if (record.resolved) return session.respond({ type: "picker.resolved", payload: record.resolved }, requestId);
  const problem = selectionProblem(record.picker, selection);
  if (problem) throw new GatewayError("unsupported", problem);
  await closeAbandoned(services, owner, record.picker, respondTo);
}

/** Answer by slash command (`/approve`, `/deny`, `/answer`, `/model`); says so when nothing is open. */
export async function answerByCommand(
  services: AskServices,
  owner: Owner,
  lane: Lane,
  command: { name: AskCommand; args: string; replyTo: string; deviceId: string },
): Promise<void> {
  const { name, args } = command;
  const kind = ASK_COMMAND_KINDS[name];
  const byId = namesPicker(name, args);
  const answer: RelayedAnswer = {
    device_id: command.deviceId,
    command: { name, args },
    ...(byId ? { picker_id: args } : { lane, kind }),
  };
  const say = (text: string) => replyBeside(services, owner, lane, command.replyTo, text);
  const held = byId ? services.asks.get(owner, args) : services.asks.inLane(owner, lane, kind).at(-1);
  if (held && held.spec.kind === kind) {
    const problem = await arbitrate(services, held, answer);
    if (problem) await say(problem);
    return;
  }
  const standing = byId ? services.asks.standing(owner, args) : undefined;
  if (standing) return void (await say(`That ask was already answered (${String((await standing).outcome)}).`));
  if (services.options.laneLock && (await relay(services, owner, answer))) return;
  if (!byId) return void (await say(noneOpen(kind)));
  const record = await findPicker(services, owner, args);
  if (!record || record.picker.kind !== kind) return void (await say(`There is no approval ${args.slice(0, 80)}.`));
  if (record.resolved) return void (await say(`That ask was already answered (${String(record.resolved.outcome)}).`));
  await closeAbandoned(services, owner, record.picker);
  await say("The turn that asked has ended, so that approval was closed.");
}

/** After a crash: close the asks that an interrupted answer left open, so devices close their cards. */
export async function interruptAsksOf(services: AskServices, owner: Owner, messageId: string): Promise<void> {
  const open = await openPickersOf(services, owner, new Set([messageId]));
  if (open.length === 0) return;
  await services.store(
    owner,
    {},
    open.map((picker) => resolvedFrame(picker, { outcome: "interrupted" })),
  );
}
