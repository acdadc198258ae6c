/**
 * The stored copies of an answer while it runs: the crash marker written before anyone sees the
 * start (a restart finds the message still streaming and closes it as interrupted), then a
 * snapshot every `checkpointIntervalMs`, so history shows a long answer while it streams.
 * @module
 */
import type { TurnServices } from "./turn-services.js";
import type { Owner } from "../protocol/ids.js";
import type { LaneTurn } from "./lanes.js";
import type { StoredMessage } from "../contracts/records.js";

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
    this.#saving = services.storage
      .commit(owner, { messages: [{ ...message }] })
      .then(() => (this.marked = true))
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
    this.#saving = this.#saving
      .then(() =>
        services.storage.commit(owner, { messages: [snapshot], ...(this.marked ? { requireMessages: [id] } : {}) }),
      )
      // Deleted meanwhile (also through another process): stop, and store nothing of it again.
      .then((result) => {
        if (!result.skipped) return;
        turn.reason = "deleted";
        turn.controller.abort("deleted");
      })
      .catch((error) => services.log.warn("turn checkpoint failed", error));
  }
}
