/**
 * The stored copies of an answer while it runs: the crash marker written before anyone sees the
 * start (a restart finds the message still streaming and closes it as interrupted), then a
 * snapshot every `checkpointIntervalMs`, so history shows a long answer while it streams.
 * @module
 */
import type { TurnServices } from "./turn-services.js";
import type { Owner } from "../ids.js";
import type { LaneTurn } from "./lanes.js";
import type { StoredMessage } from "../contracts/records.js";

/** One answer's checkpoints, saved in order. */
export class AnswerCheckpoints {
  /** True once the crash marker is stored: later saves require the message to still exist. */
  marked = false;
  readonly #hub: TurnServices;
  readonly #owner: Owner;
  readonly #message: StoredMessage;
  readonly #turn: LaneTurn;
  #saving: Promise<unknown>;
  #last: number;

  /** Starts storing the crash marker at once. */
  constructor(hub: TurnServices, owner: Owner, message: StoredMessage, turn: LaneTurn) {
    this.#hub = hub;
    this.#owner = owner;
    this.#message = message;
    this.#turn = turn;
    this.#last = message.ts;
    this.#saving = hub.storage
      .commit(owner, { messages: [{ ...message }] })
      .then(() => (this.marked = true))
      .catch((error) => hub.log.warn("turn checkpoint failed", error));
  }

  /** Resolves when every save started so far has settled (they never reject). */
  settled(): Promise<unknown> {
    return this.#saving;
  }

  /** Save a snapshot when the interval has passed since the last one (streaming only). */
  maybeSave(): void {
    const hub = this.#hub;
    if (!hub.options.streaming || hub.now() - this.#last < hub.options.checkpointIntervalMs) return;
    this.#last = hub.now();
    this.save();
  }

  /** Save a snapshot now, after the earlier saves. */
  save(): void {
    if (this.#turn.reason === "deleted") return;
    const { hub, owner, turn } = { hub: this.#hub, owner: this.#owner, turn: this.#turn };
    const snapshot = { ...this.#message, media: [...this.#message.media] };
    const id = snapshot.message_id;
    this.#saving = this.#saving
      .then(() => hub.storage.commit(owner, { messages: [snapshot], ...(this.marked ? { requireMessages: [id] } : {}) }))
      // Deleted meanwhile (also through another process): stop, and store nothing of it again.
      .then((result) => {
        if (!result.skipped) return;
        turn.reason = "deleted";
        turn.controller.abort("deleted");
      })
      .catch((error) => hub.log.warn("turn checkpoint failed", error));
  }
}
