/**
 * The `duePushes` storage capability (docs/PROTOCOL.md §21.6): pushes that wait for `pushAfterMs`
 * (docs/PROTOCOL.md §15) are stored before they are waited on, so that a restart, a crash or
 * another process sharing the storage sends each once. Optional: without it a waiting push lives
 * only in the memory of the process that decided it. The memory, sql.js and PostgreSQL storages
 * have it; `describeDuePushConformance` from `chat-gateway/testing` checks one.
 * @module
 */
import type { Owner } from "../protocol/ids.js";

/** One push waiting for its time. */
export interface DuePushRecord {
  owner: Owner;
  /**
   * What it is the push of, unique per owner: `m:<message_id>` for an answer, `p:<picker_id>` for
   * an ask. At most 300 characters.
   */
  key: string;
  /** Opaque JSON text the gateway wrote (the push and what deciding it needs), at most 16,384 characters. */
  payload: string;
  /** When it falls due, epoch milliseconds. */
  due_at: number;
}

/**
 * Where waiting pushes are kept. Every member may be called concurrently, also by several
 * processes sharing the storage; each is atomic on its own. Writes are durable when they resolve.
 * A push taken by {@link DuePushStore.claimDuePushes} or {@link DuePushStore.dropDuePush} is gone:
 * whoever took it sends it or not, and nobody else can (at most once, by design).
 */
export interface DuePushStore {
  /** Store a waiting push. When the owner already has one with this key, it is left as it is. */
  addDuePush(record: DuePushRecord): Promise<void>;
  /**
   * Take up to `limit` (at least 1) pushes whose `due_at` is at or before `now`, earliest first,
   * removing them in the same atomic step: of any number of concurrent calls, in any processes,
   * each push goes to exactly one.
   */
  claimDuePushes(now: number, limit: number): Promise<DuePushRecord[]>;
  /**
   * Take the owner's push with this key, due or not: true when this call removed it, false when it
   * was not there (never stored, or taken already). Of concurrent takes of one push (this or a
   * claim), exactly one gets it.
   */
  dropDuePush(owner: Owner, key: string): Promise<boolean>;
}
