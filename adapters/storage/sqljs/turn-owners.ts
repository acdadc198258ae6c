/**
 * The owners that may have a waiting or streaming message, so that `waitingTurns` and
 * `unfinishedMessages` for any other owner are answered without a trip to the database process.
 * A joining device asks both for its owner after `hello.ok` and again after `sync.done`
 * (docs/PROTOCOL.md §14.3): four of the seven requests of a reconnecting device, nearly always
 * for an owner with neither, and every device of a fleet asks at once after a restart.
 * @module
 */
import type { Owner, StoredMessage } from "chat-gateway";
import type { JournalOp } from "./apply.js";

/**
 * Sound because the folder's lock lets no other process write it: every write passes
 * {@link TurnOwners.writing} before it is sent, so a read sent after it goes to the database. A
 * message stops waiting or streaming without its owner leaving the set; the set starts again at
 * the next open, from the rows themselves.
 */
export class TurnOwners {
  /** Undefined until loaded: then every read goes to the database. */
  #owners: Set<Owner> | undefined;

  /** The owners of the waiting and streaming messages stored, read once the database is open. */
  load(rows: ReadonlyArray<{ owner: Owner }>): void {
    this.#owners = new Set(rows.map((r) => r.owner));
  }

  /** A write about to be sent: its owner joins the set when it stores a message that waits or streams. */
  writing(op: JournalOp): void {
    if (!this.#owners) return;
    if (op.k === "adopt") this.#owners.add(op.to);
    else if (op.k === "commit" && op.c.messages?.some(marked)) this.#owners.add(op.o);
  }

  /** False when the owner has no waiting or streaming message for certain. */
  mayHave(owner: Owner | undefined): boolean {
    return owner === undefined || this.#owners === undefined || this.#owners.has(owner);
  }
}

/** Stored with `status` streaming, or with the waiting mark (the rows the two reads look for). */
function marked(m: StoredMessage): boolean {
  return m.status === "streaming" || m.waiting === true;
}
