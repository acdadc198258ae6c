/**
 * What the core adds around a storage implementation's `commit` and `adoptOwner`, so that an
 * implementation deals in plain data only: the core computes each outbox frame's redaction key
 * and turns the implementation's plain-data refusals into the errors clients get
 * (docs/PROTOCOL.md §5 redaction, docs/PROTOCOL.md §7 media held by one message, docs/PROTOCOL.md §10.4 adoption).
 * @module
 */
import type { Change, CommitResult, OutboxFrame } from "../contracts/storage-change.js";
import type { AdoptedCounts, AdoptionRefused, StorageImplementation } from "../contracts/storage.js";
import type { Owner } from "../protocol/ids.js";
import { outboxRedactionKey } from "./outbox-redaction.js";
import { mediaTakenError } from "../media/media-attachment.js";
import { adoptionRefusedError, checkAdoption } from "./adoption.js";

type Commit = (owner: Owner, change: Change) => Promise<CommitResult>;
type Adopt = (from: Owner, to: Owner) => Promise<AdoptedCounts>;

/** The frame with the redaction key the core gives it (`null`: kept whatever is deleted). */
function keyed(frame: OutboxFrame): OutboxFrame {
  return { type: frame.type, payload: frame.payload, redactKey: outboxRedactionKey(frame) ?? null };
}

/**
 * `commit` with every outbox frame keyed, rejecting with the `unsupported` error of taken media
 * when the implementation reports {@link CommitResult.mediaTaken} (it applied nothing then).
 */
export function keyedCommit(commit: NonNullable<StorageImplementation["commit"]>): Commit {
  return async (owner, change) => {
    const result = await commit(
      owner,
      change.outbox?.length ? { ...change, outbox: change.outbox.map(keyed) } : change,
    );
    if (result.mediaTaken !== undefined) throw mediaTakenError(result.mediaTaken);
    return result;
  };
}

function isRefusal(answer: AdoptedCounts | AdoptionRefused): answer is AdoptionRefused {
  return (answer as Partial<AdoptionRefused>).refused !== undefined;
}

/**
 * `adoptOwner` refusing `from === to` before the implementation is asked, and rejecting with the
 * `unsupported` error when the implementation reports that `to` has data of its own.
 */
export function checkedAdoption(adopt: NonNullable<StorageImplementation["adoptOwner"]>): Adopt {
  return async (from, to) => {
    checkAdoption(from, to);
    const answer = await adopt(from, to);
    if (isRefusal(answer)) throw adoptionRefusedError(to);
    return answer;
  };
}
