/**
 * One turn at a time per lane, in order; a bound on turns per owner.
 * @module
 */
import { GatewayError } from "./errors.js";
import type { Owner } from "./ids.js";
import type { LaneLock } from "./lane-lock.js";
import type { Lane } from "./storage.js";

/** Why a running turn was aborted. */
export type AbortReason = "stop" | "timeout" | "shutdown" | "deleted" | "limit";

/** A turn that holds its lane. */
export interface LaneTurn {
  readonly controller: AbortController;
  /** Set when aborted. */
  reason: AbortReason | undefined;
}

type Job = (turn: LaneTurn) => Promise<void>;

interface LaneState {
  running: LaneTurn | undefined;
  queue: Job[];
}

/** Key of a lane within an owner. */
export function laneKey(owner: Owner, lane: Lane): string {
  return `${owner}\u0000${lane.chat_id}\u0000${lane.thread_id ?? ""}`;
}

/** Runs jobs one at a time per lane. */
export class LaneScheduler {
  readonly #lanes = new Map<string, LaneState>();
  readonly #perOwner = new Map<Owner, number>();
  readonly #maxPerOwner: number;
  #active = 0;
  #idleWaiters: Array<() => void> = [];

  readonly #lock: LaneLock | undefined;
  readonly #onLockError: (error: unknown) => void;

  constructor(maxPerOwner: number, lock?: LaneLock, onLockError: (error: unknown) => void = () => undefined) {
    this.#maxPerOwner = maxPerOwner;
    this.#lock = lock;
    this.#onLockError = onLockError;
  }

  /** Refuse with `rate_limited` when the owner already has too many turns waiting or running. */
  checkCapacity(owner: Owner): void {
    if ((this.#perOwner.get(owner) ?? 0) >= this.#maxPerOwner) {
      throw new GatewayError("rate_limited", `too many turns in flight (at most ${this.#maxPerOwner})`);
    }
  }

  /** Queue a job on its lane; it runs when every earlier job of the lane has finished. */
  enqueue(owner: Owner, lane: Lane, job: Job): void {
    const key = laneKey(owner, lane);
    let state = this.#lanes.get(key);
    if (!state) {
      state = { running: undefined, queue: [] };
      this.#lanes.set(key, state);
    }
    this.#perOwner.set(owner, (this.#perOwner.get(owner) ?? 0) + 1);
    this.#active++;
    state.queue.push(job);
    if (!state.running) void this.#next(key, owner, state);
  }

  async #next(key: string, owner: Owner, state: LaneState): Promise<void> {
    const job = state.queue.shift();
    if (!job) {
      state.running = undefined;
      this.#lanes.delete(key);
      return;
    }
    const turn: LaneTurn = { controller: new AbortController(), reason: undefined };
    state.running = turn;
    let lease: { release(): Promise<void> } | undefined;
    try {
      // Another process may hold the lane; a stop or shutdown while waiting still ends the job.
      if (this.#lock) {
        try {
          lease = await this.#lock.acquire(key, turn.controller.signal);
        } catch (error) {
          if (!turn.controller.signal.aborted) this.#onLockError(error);
        }
      }
      await job(turn);
    } catch {
      // Jobs report their own failures; the lane must go on regardless.
    } finally {
      await lease?.release().catch(this.#onLockError);
      const left = (this.#perOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.#perOwner.set(owner, left);
      else this.#perOwner.delete(owner);
      this.#active--;
      if (this.#active === 0) for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
    void this.#next(key, owner, state);
  }

  /** The running turn of a lane, if any. */
  running(owner: Owner, lane: Lane): LaneTurn | undefined {
    return this.#lanes.get(laneKey(owner, lane))?.running;
  }

  /** Abort the running turn of a lane; true when there was one. */
  abort(owner: Owner, lane: Lane, reason: AbortReason): boolean {
    const turn = this.running(owner, lane);
    if (!turn || turn.controller.signal.aborted) return false;
    turn.reason = reason;
    turn.controller.abort(reason);
    return true;
  }

  /** Drop the waiting jobs of a lane and abort its running one (the lane was deleted). */
  clear(owner: Owner, lane: Lane): void {
    const state = this.#lanes.get(laneKey(owner, lane));
    if (!state) return;
    const dropped = state.queue.splice(0).length;
    if (dropped > 0) {
      this.#perOwner.set(owner, Math.max(0, (this.#perOwner.get(owner) ?? 0) - dropped));
      this.#active -= dropped;
    }
    this.abort(owner, lane, "deleted");
  }

  /** Abort every running turn and drop every waiting one (shutdown). */
  abortAll(reason: AbortReason): void {
    for (const state of this.#lanes.values()) {
      this.#active -= state.queue.length;
      state.queue.length = 0;
      if (state.running && !state.running.controller.signal.aborted) {
        state.running.reason = reason;
        state.running.controller.abort(reason);
      }
    }
    this.#perOwner.clear();
    if (this.#active <= 0) {
      this.#active = 0;
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }

  /** Resolves when no job is waiting or running. */
  idle(): Promise<void> {
    if (this.#active === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}
