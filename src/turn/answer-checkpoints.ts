/**
 * The stored copies of an answer while it runs: the crash marker written before anyone sees the
 * start (a restart finds the message still streaming and closes it as interrupted), then a
 * snapshot every `checkpointIntervalMs`, so history shows a long answer while it streams.
 * @module
 */
import type { TurnServices } from "./turn-services.js";
import type { Owner } from "../protocol/ids.js";
import { fenceOf, type LaneTurn } from "./lane-turn.js";
import type { StoredMessage } from "../contracts/records.js";

/** The turn no longer holds its lane: it stops, and its end stores nothing (docs/PROTOCOL.md §4.2). */
export function lose(turn: LaneTurn): void {
  if (turn.reason === "deleted") return;
  turn.reason = "lost";
  turn.controller.abort("lost");
}

/** One answer's checkpoints, saved in order. */
export class AnswerCheckpoints {
  /** True once the crash marker is stored: later saves require the message to still exist. */
  marked = false;
  readonly #services: TurnServices;
  readonly #owner: Owner;
  readonly #message: StoredMessage;
  readonly #turn: LaneTurn;
  #saving: Promise<unknown>;
  #last: number;

  /** Starts storing the crash marker at once. */
  constructor(services: TurnServices, owner: Owner, message: StoredMessage, turn: LaneTurn) {
    this.#services = services;
    this.#owner = owner;
    this.#message = message;
    this.#turn = turn;
    this.#last = message.ts;
    // With the lane's token: a process that lost the lane does not even start an answer there.
    this.#saving = services.storage
      .commit(owner, { messages: [{ ...message }], ...fenceOf(turn) })
      .then((result) => {
        if (result.fenced) lose(turn);
        else this.marked = true;
      })
      .catch((error) => services.log.warn("turn checkpoint failed", error));
  }

  /** Resolves when every save started so far has settled (they never reject). */
  settled(): Promise<unknown> {
    return this.#saving;
  }

  /** Save a snapshot when the interval has passed since the last one (streaming only). */
  maybeSave(): void {
    const services = this.#services;
    if (!services.options.streaming || services.now() - this.#last < services.options.checkpointIntervalMs) return;
    this.#last = services.now();
    this.save();
  }

  /** Save a snapshot now, after the earlier saves. */
  save(): void {
    if (this.#turn.reason === "deleted") return;
    const { services, owner, turn } = { services: this.#services, owner: this.#owner, turn: this.#turn };
    const snapshot = { ...this.#message, media: [...this.#message.media] };
    const id = snapshot.message_id;
    // Only while it streams, and only while this process holds the lane: an answer ended by
    // another process (or whose lane another process took) is never turned back to streaming.
    const checks = this.marked ? { requireMessages: [id], requireStreaming: [id] } : {};
    this.#saving = this.#saving
      .then(() => services.storage.commit(owner, { messages: [snapshot], ...checks, ...fenceOf(turn) }))
      .then(async (result) => {
        if (!result.skipped) return;
        // Lost to another process: stop at once, quietly. Deleted meanwhile (also through another
        // process): stop, and store nothing of it again.
        if (result.fenced || (await services.storage.getMessage(owner, id))) return lose(turn);
        turn.reason = "deleted";
        turn.controller.abort("deleted");
      })
      .catch((error) => services.log.warn("turn checkpoint failed", error));
  }
}
