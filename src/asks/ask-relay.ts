/**
 * Answers that reach a process which does not hold the ask (docs/PROTOCOL.md §11): they travel on
 * the Bus to the process running the turn, the single arbiter, which resolves the ask and sends
 * the `picker.resolved` response back to the connection that asked. Used with a lane lock, the
 * sign of a gateway running in several processes.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { AskServices } from "./ask-services.js";
import type { Respondent } from "../outbox/outbox.js";
import type { Owner } from "../protocol/ids.js";
import type { OutgoingFrame } from "../contracts/bus.js";
import type { Ask, AskAnswer } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import type { OpenAsk } from "./open-asks.js";
import { INTERNAL_PREFIX, RESPOND_FRAME } from "../outbox/fan-out.js";
import { ownerSubscriptions } from "../outbox/owner-subscriptions.js";
import type { Selection } from "./ask-shapes.js";
import { sleep, type Clock, type ClockTimer } from "../support/clock.js";

/** Bus frames between gateway processes (`INTERNAL_PREFIX`); never delivered to a device. */
const RELAY_FRAME = `${INTERNAL_PREFIX}ask`;
const ACK_FRAME = `${INTERNAL_PREFIX}ask.ack`;

/** How long a relayed answer waits for the arbiter before the stored state decides. */
const ACK_WAIT_MS = 1_500;

/** An answer on its way to the arbiter: one ask by id, or the newest of a kind in a lane. */
export interface RelayedAnswer {
  picker_id?: string;
  lane?: Lane;
  kind?: Ask["kind"];
  /** The slash command that answers, when it came as one (the arbiter maps it to a selection). */
  command?: { name: string; args: string };
  selection?: Selection;
  device_id: string;
  /** The connection and request id that get the `picker.resolved` response. */
  connection_id?: string;
  request_id?: string;
}

/** What the arbiter does with a relayed answer it holds: resolve, or refuse with a reason. */
export type Arbitrate = (entry: OpenAsk, relayed: RelayedAnswer, respondTo: Respondent | undefined) => Promise<void>;

/** A session stand-in that sends the response to a connection of another process. */
export function remoteSession(services: AskServices, owner: Owner, connectionId: string): Respondent["session"] {
  return {
    id: connectionId,
    respond(frame: OutgoingFrame, requestId: string | undefined) {
      services.bus.publish({
        owner,
        frame: { type: RESPOND_FRAME, payload: { connection_id: connectionId, request_id: requestId, frame } },
      });
    },
  };
}

/**
 * Listen for relayed answers while this process holds asks of an owner; `arbitrate` handles the
 * ones it holds, and each handled one is acknowledged to its sender.
 */
export function listenForRelays(services: AskServices, arbitrate: Arbitrate): void {
  const asks = services.asks;
  asks.onOwner = ownerSubscriptions(services.bus, (owner, message) => {
    if (message.frame.type !== RELAY_FRAME) return;
    const { token, ...relayed } = message.frame.payload as unknown as RelayedAnswer & { token: string };
    const entry = relayed.picker_id
      ? asks.get(owner, relayed.picker_id)
      : relayed.lane && asks.inLane(owner, relayed.lane, relayed.kind).at(-1);
    if (!entry) return;
    const respondTo = relayed.connection_id
      ? { session: remoteSession(services, owner, relayed.connection_id), requestId: relayed.request_id }
      : undefined;
    services.bus.publish({ owner, frame: { type: ACK_FRAME, payload: { token } } });
    arbitrate(entry, relayed, respondTo).catch((error) => services.log.warn("a relayed answer failed", error));
  });
}

/** How long a relayed answer waits for the arbiter before it also looks for the stored outcome (ms). */
const SETTLED_AFTER_MS = 100;
/** How often it looks then (ms). */
const SETTLED_POLL_MS = 50;

/** The ask's stored outcome (a `picker.resolved` payload), once there is one. */
export type StoredOutcome = () => Promise<Record<string, unknown> | undefined>;

/**
 * Send an answer to whichever process holds the ask: true when one took it, false when none did.
 * With `settled`, resolves early with the ask's stored outcome once it is there: an ask resolved
 * elsewhere is held by no process, so waiting for the arbiter would only run out (the loser of a
 * race across processes learns the outcome that stands as soon as it is stored).
 */
export async function relay(
  services: AskServices,
  owner: Owner,
  relayed: RelayedAnswer,
  settled?: StoredOutcome,
): Promise<boolean | Record<string, unknown>> {
  const token = randomUUID();
  let unsubscribe: (() => void) | undefined;
  const { clock } = services.options;
  let timer: ClockTimer | undefined;
  let done = false;
  try {
    return await new Promise<boolean | Record<string, unknown>>((resolve) => {
      const finish = (outcome: boolean | Record<string, unknown>) => {
        done = true;
        resolve(outcome);
      };
      unsubscribe = services.bus.subscribe(owner, (message) => {
        if (message.frame.type === ACK_FRAME && message.frame.payload.token === token) finish(true);
      });
      timer = clock.setTimeout(() => finish(false), ACK_WAIT_MS);
      void Promise.resolve(services.bus.ready?.(owner)).then(() =>
        services.bus.publish({ owner, frame: { type: RELAY_FRAME, payload: { ...relayed, token } } }),
      );
      if (settled) void watchStored(clock, settled, () => done, finish);
    });
  } finally {
    done = true;
    clock.clearTimeout(timer);
    unsubscribe?.();
  }
}

/** Looks for the stored outcome until the relay is done; a failed look is tried again. */
async function watchStored(
  clock: Clock,
  settled: StoredOutcome,
  isDone: () => boolean,
  finish: (outcome: Record<string, unknown>) => void,
): Promise<void> {
  await sleep(clock, SETTLED_AFTER_MS);
  while (!isDone()) {
    const found = await settled().catch(() => undefined);
    if (found && !isDone()) return finish(found);
    await sleep(clock, SETTLED_POLL_MS);
  }
}

/** The answer an ask gets from a selection. */
export function selected(selection: Selection): AskAnswer {
  const answer: AskAnswer = { outcome: "selected" };
  if (selection.option_id !== undefined) answer.option_id = selection.option_id;
  if (selection.text !== undefined) answer.text = selection.text;
  return answer;
}
