/**
 * The turn as its lane hands it over: its abort, what it is writing, and the lane token its writes
 * carry. The lane's scheduler (`lanes/scheduler.ts`) makes one; an answer (`turn.ts`) runs in it.
 * @module
 */
import type { Owner } from "../protocol/ids.js";
import type { Lane, LaneFence } from "../contracts/storage.js";
import type { OutgoingFrame } from "../contracts/bus.js";
import type { AnsweredAsk } from "../contracts/records.js";

/**
 * Why a running turn was aborted. `lost`: this process no longer holds the lane (its lease was
 * lost, or the storage refused a write with its lane token): it writes nothing more there
 * (docs/PROTOCOL.md §4.2).
 */
export type AbortReason = "stop" | "timeout" | "shutdown" | "deleted" | "limit" | "lost";

/** A turn that holds its lane. */
export interface LaneTurn {
  readonly controller: AbortController;
  /** Set when aborted. */
  reason: AbortReason | undefined;
  /**
   * True once the turn holds its lane (its lease taken, or the lock failed and it runs without):
   * before that it only waits for another process's turn, which a stop must reach instead.
   */
  holds?: boolean;
  /** The assistant message the turn is writing, once it has one: deleting it ends the turn. */
  answer?: string;
  /** The user message that answer replies to, once it has one (a steer is handed to its turn). */
  replyTo?: string;
  /** Told when an ask of this turn opens (true) or closes (false): typing and the idle clock pause. */
  onAsk?: (open: boolean) => void;
  /** Awaited before the answer's final frame is stored: the turn's asks are resolved first. */
  beforeEnd?: () => Promise<void>;
  /** The turn's asks as they ended, in that order: kept on its answer (docs/PROTOCOL.md §14.5). */
  asks?: AnsweredAsk[];
  /** The live frames that show the running answer as it stands, to a device that joins mid-turn (docs/PROTOCOL.md §14.3). */
  snapshot?: () => OutgoingFrame[];
  /**
   * The lane token this process got when it took the lane (with a lane lock and a storage with the
   * `fencing` capability): every write of the turn carries it, so the storage refuses them once
   * another process has taken the lane (docs/PROTOCOL.md §4.2).
   */
  fence?: LaneFence;
}

/** The part of a change that makes it a write of the turn's holder only (`Change.fence`). */
export function fenceOf(turn: Pick<LaneTurn, "fence"> | undefined): { fence?: LaneFence } {
  return turn?.fence ? { fence: turn.fence } : {};
}

/** Key of a lane within an owner. */
export function laneKey(owner: Owner, lane: Lane): string {
  return `${owner}\u0000${lane.chat_id}\u0000${lane.thread_id ?? ""}`;
}
