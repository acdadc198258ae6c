/**
 * One turn at a time per lane, in order; a bound on turns per owner.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import type { Owner } from "../protocol/ids.js";
import type { LaneLease, LaneLock } from "../contracts/lane-lock.js";
import type { Lane, Storage } from "../contracts/storage.js";
import { laneKey, type AbortReason, type LaneTurn } from "../turn/lane-turn.js";

/**
 * Takes a lane in the storage for a process that just got its lease: the lane's new token, or
 * undefined when the storage keeps none. Rejects when the storage cannot be written.
 */
export type TakeLane = (owner: Owner, lane: Lane) => Promise<number | undefined>;

type Job = (turn: LaneTurn) => Promise<void>;

/** Told why a waiting job will never run (its lane was deleted, or the gateway shut down). */
export type DropHandler = (reason: AbortReason) => void;

interface QueuedJob {
  run: Job;
  dropped: DropHandler | undefined;
  /** Set on a job that runs only on a lane no other process holds; called instead of it otherwise. */
  whenHeld?: () => void;
}

/** How long a job that runs only on a free lane tries for its lease (ms): a free lane answers at once. */
const FREE_LANE_WAIT_MS = 200;

interface LaneState {
  readonly owner: Owner;
  readonly lane: Lane;
  running: LaneTurn | undefined;
  queue: QueuedJob[];
}

/**
 * How the gateway takes a lane in the storage: with a lane lock (lanes shared by processes) and a
 * storage with the `fencing` capability, one commit raising the lane's token. Without a lock one
 * process runs a lane's turns alone and needs no token.
 */
export function laneTaker(storage: Storage, lock: LaneLock | undefined): TakeLane | undefined {
  if (!lock || !storage.capabilities.fencing) return undefined;
  return async (owner, lane) => (await storage.commit(owner, { takeLane: lane })).fence;
}

/** Runs jobs one at a time per lane. */
export class LaneScheduler {
  readonly #lanes = new Map<string, LaneState>();
  readonly #perOwner = new Map<Owner, number>();
  readonly #maxPerOwner: number;
  #active = 0;
  #idleWaiters: Array<() => void> = [];
  /** Draining: no job starts any more (docs/PROTOCOL.md §18). */
  #held = false;

  readonly #lock: LaneLock | undefined;
  readonly #onLockError: (error: unknown) => void;
  readonly #takeLane: TakeLane | undefined;
  /** Turns holding their lane in this process, per owner (a job waiting for another process's lease does not count). */
  readonly #holding = new Map<Owner, number>();
  /**
   * Told when an owner's first turn in this process takes its lane (true) and when its last one
   * lets go (false); the turn starts once what it returns has settled. A job still waiting for a
   * lane another process holds is not counted: that process is the one to notify (a relayed stop,
   * a joining device's snapshot), and this one hears nothing of the owner until it takes the lane.
   */
  onOwner: ((owner: Owner, active: boolean) => Promise<void> | void) | undefined;

  constructor(
    maxPerOwner: number,
    lock?: LaneLock,
    onLockError: (error: unknown) => void = () => undefined,
    takeLane?: TakeLane,
  ) {
    this.#maxPerOwner = maxPerOwner;
    this.#lock = lock;
    this.#onLockError = onLockError;
    this.#takeLane = takeLane;
  }

  /** Refuse with `rate_limited` when the owner already has too many turns waiting or running. */
  checkCapacity(owner: Owner): void {
    if (this.#held) throw new GatewayError("rate_limited", "the server is restarting: send it again once reconnected");
    if ((this.#perOwner.get(owner) ?? 0) >= this.#maxPerOwner) {
      throw new GatewayError("rate_limited", `too many turns in flight (at most ${this.#maxPerOwner})`);
    }
  }

  /**
   * Queue a job on its lane; it runs when every earlier job of the lane has finished (with `front`,
   * next, ahead of the waiting ones). A job dropped before it runs (lane deleted, shutdown) is
   * never run; `dropped` is told instead. With `whenHeld` and a lane lock, the job runs only if the
   * lane is free across processes when its turn comes: a lane another process holds is left to
   * it (its holder answers the lane, and this process neither waits for it nor hears of its turns),
   * and `whenHeld` is called instead of the job.
   */
  enqueue(owner: Owner, lane: Lane, job: Job, dropped?: DropHandler, front = false, whenHeld?: () => void): void {
    if (this.#held) return tellDropped([{ run: job, dropped }], "shutdown");
    const key = laneKey(owner, lane);
    let state = this.#lanes.get(key);
    if (!state) {
      state = { owner, lane: { chat_id: lane.chat_id, thread_id: lane.thread_id }, running: undefined, queue: [] };
      this.#lanes.set(key, state);
    }
    const before = this.#perOwner.get(owner) ?? 0;
    this.#perOwner.set(owner, before + 1);
    this.#active++;
    const queued: QueuedJob = { run: job, dropped, ...(whenHeld ? { whenHeld } : {}) };
    if (front) state.queue.unshift(queued);
    else state.queue.push(queued);
    if (!state.running) void this.#next(key, owner, state);
  }

  /**
   * Run the lane's next job. `held`: the lane is still held by the job before it here (its lease,
   * and its count in `#holding`), handed over so that no other process takes the lane in between.
   */
  async #next(key: string, owner: Owner, state: LaneState, held?: { lease: LaneLease | undefined }): Promise<void> {
    const queued = state.queue.shift();
    if (!queued) {
      state.running = undefined;
      this.#lanes.delete(key);
      return;
    }
    const turn: LaneTurn = { controller: new AbortController(), reason: undefined };
    state.running = turn;
    let hold = held;
    const lost = () => this.abort(owner, state.lane, "lost");
    try {
      if (!hold) {
        const lease = await this.#take(key, turn, queued.whenHeld !== undefined);
        if (lease === false) return queued.whenHeld?.();
        hold = { lease };
        await this.#hold(owner);
      }
      turn.holds = true;
      hold.lease?.lost?.addEventListener("abort", lost, { once: true });
      if (hold.lease?.lost?.aborted) lost();
      await this.#fence(owner, state, turn);
      await queued.run(turn);
    } catch {
      // Jobs report their own failures; the lane must go on regardless.
    } finally {
      hold?.lease?.lost?.removeEventListener("abort", lost);
      // The lane's next job here goes on under the same lease: between two jobs of this process the
      // lane is never free for another process's recovery to take (and this one keeps listening).
      // A lease that was lost is not handed on: the next job takes the lane afresh.
      const handOver = hold && state.queue.length > 0 && !hold.lease?.lost?.aborted ? hold : undefined;
      if (hold && !handOver) {
        await hold.lease?.release().catch(this.#onLockError);
        this.#letGo(owner);
      }
      this.#release(owner, 1);
      this.#active--;
      if (this.#active === 0) for (const resolve of this.#idleWaiters.splice(0)) resolve();
      void this.#next(key, owner, state, handOver);
    }
  }

  /**
   * The lane's lease from the lane lock (undefined without one). Another process may hold the lane;
   * a stop or shutdown while waiting still ends the job. With `onlyFree`, false when the lane is
   * not free at once (held, or the lock unreachable: the next recovery round tries again).
   */
  async #take(key: string, turn: LaneTurn, onlyFree: boolean): Promise<LaneLease | undefined | false> {
    if (!this.#lock) return undefined;
    const signal = onlyFree
      ? AbortSignal.any([turn.controller.signal, AbortSignal.timeout(FREE_LANE_WAIT_MS)])
      : turn.controller.signal;
    try {
      return await this.#lock.acquire(key, signal);
    } catch (error) {
      if (onlyFree) return false;
      if (!turn.controller.signal.aborted) this.#onLockError(error);
      return undefined;
    }
  }

  /**
   * Take the lane in the storage once the lease is held (or the lock failed: the token alone then
   * keeps a second holder from writing). A storage that cannot be written gives no token: the job
   * runs no turn, and its message waits for the next recovery.
   */
  async #fence(owner: Owner, state: LaneState, turn: LaneTurn): Promise<void> {
    if (!this.#takeLane || turn.controller.signal.aborted) return;
    try {
      const token = await this.#takeLane(owner, state.lane);
      if (token !== undefined) turn.fence = { ...state.lane, token };
    } catch (error) {
      this.#onLockError(error);
      if (state.running === turn) this.abort(owner, state.lane, "lost");
    }
  }

  /** Count `count` jobs of the owner as gone. */
  #release(owner: Owner, count: number): void {
    const left = (this.#perOwner.get(owner) ?? 0) - count;
    if (left > 0) return void this.#perOwner.set(owner, left);
    this.#perOwner.delete(owner);
  }

  /** Count a turn of the owner as holding its lane here; the first one waits for `onOwner`. */
  async #hold(owner: Owner): Promise<void> {
    const before = this.#holding.get(owner) ?? 0;
    this.#holding.set(owner, before + 1);
    if (before === 0) await this.onOwner?.(owner, true);
  }

  /** A turn of the owner let its lane go; the last one tells `onOwner`. */
  #letGo(owner: Owner): void {
    const left = (this.#holding.get(owner) ?? 0) - 1;
    if (left > 0) return void this.#holding.set(owner, left);
    this.#holding.delete(owner);
    void this.onOwner?.(owner, false);
  }

  /**
   * A fresh turn for the job that holds the lane, replacing its current one: a job that answers
   * several waiting messages in a row gives each its own stop and abort. Undefined when the lane
   * holds no job, or when the current turn was ended for good (shutdown, the lane deleted, or lost
   * to another process).
   */
  renew(owner: Owner, lane: Lane): LaneTurn | undefined {
    const state = this.#lanes.get(laneKey(owner, lane));
    const current = state?.running;
    if (
      this.#held ||
      !state ||
      !current ||
      current.reason === "shutdown" ||
      current.reason === "deleted" ||
      current.reason === "lost"
    )
      return undefined;
    const turn: LaneTurn = { controller: new AbortController(), reason: undefined, holds: true, fence: current.fence };
    state.running = turn;
    return turn;
  }

  /** The running turns of an owner's lanes in this process. */
  runningOf(owner: Owner): LaneTurn[] {
    const prefix = `${owner}\u0000`;
    const out: LaneTurn[] = [];
    for (const [key, state] of this.#lanes) if (key.startsWith(prefix) && state.running) out.push(state.running);
    return out;
  }

  /** The running turn of a lane, if any. */
  running(owner: Owner, lane: Lane): LaneTurn | undefined {
    return this.#lanes.get(laneKey(owner, lane))?.running;
  }

  /**
   * Stop the lane's turn if this process runs it (`/stop`, `turn.stop`): a job still waiting for
   * another process's lease is not that turn, and stays queued. True when there was one.
   */
  stop(owner: Owner, lane: Lane): boolean {
    return this.running(owner, lane)?.holds === true && this.abort(owner, lane, "stop");
  }

  /** Abort the running turn of a lane; true when there was one. */
  abort(owner: Owner, lane: Lane, reason: AbortReason): boolean {
    const turn = this.running(owner, lane);
    if (!turn || turn.controller.signal.aborted) return false;
    turn.reason = reason;
    turn.controller.abort(reason);
    return true;
  }

  /**
   * End the lane's running turn, storing nothing more of it, when it is writing one of these
   * messages (they are being deleted). Also when the turn was already stopped but has not saved
   * its end yet: the reason changes so that save is skipped. True when there was such a turn.
   */
  dropAnswer(owner: Owner, lane: Lane, messageIds: readonly string[]): boolean {
    const turn = this.running(owner, lane);
    if (turn?.answer === undefined || !messageIds.includes(turn.answer)) return false;
    turn.reason = "deleted";
    turn.controller.abort("deleted");
    return true;
  }

  /** Drop the waiting jobs of a lane and abort its running one (the lane was deleted). */
  clear(owner: Owner, lane: Lane): void {
    const state = this.#lanes.get(laneKey(owner, lane));
    if (!state) return;
    const dropped = state.queue.splice(0);
    if (dropped.length > 0) {
      this.#release(owner, dropped.length);
      this.#active -= dropped.length;
    }
    this.abort(owner, lane, "deleted");
    tellDropped(dropped, "deleted");
  }

  /** Abort every running turn and drop every waiting one (shutdown). */
  abortAll(reason: AbortReason): void {
    const dropped = this.#dropWaiting();
    for (const state of this.#lanes.values()) {
      if (state.running && !state.running.controller.signal.aborted) {
        state.running.reason = reason;
        state.running.controller.abort(reason);
      }
    }
    for (const owner of [...this.#perOwner.keys()]) this.#release(owner, Infinity);
    if (this.#active <= 0) {
      this.#active = 0;
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
    tellDropped(dropped, reason);
  }

  /**
   * Draining (docs/PROTOCOL.md §18): running turns go on, but nothing new starts. Waiting jobs
   * are dropped here (their messages stay stored `waiting` for the next start or another
   * process), a job that answers several waiting messages stops after its current one, and new
   * turns are refused `rate_limited`. `idle()` then resolves once the running turns end.
   */
  hold(): void {
    this.#held = true;
    const dropped = this.#dropWaiting();
    if (this.#active <= 0) for (const resolve of this.#idleWaiters.splice(0)) resolve();
    tellDropped(dropped, "shutdown");
  }

  /** Take every waiting job off its lane: they stop counting as active and against their owner. */
  #dropWaiting(): QueuedJob[] {
    const dropped: QueuedJob[] = [];
    for (const state of this.#lanes.values()) {
      const waiting = state.queue.splice(0);
      this.#active -= waiting.length;
      if (waiting.length > 0) this.#release(state.owner, waiting.length);
      dropped.push(...waiting);
    }
    return dropped;
  }

  /** Turns running and waiting in this process, counted now (docs/PROTOCOL.md §18.3). */
  counts(): { running: number; waiting: number } {
    let running = 0;
    let waiting = 0;
    for (const state of this.#lanes.values()) {
      if (state.running) running++;
      waiting += state.queue.length;
    }
    return { running, waiting };
  }

  /** Resolves when no job is waiting or running. */
  idle(): Promise<void> {
    if (this.#active === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}

function tellDropped(jobs: QueuedJob[], reason: AbortReason): void {
  for (const job of jobs) {
    try {
      job.dropped?.(reason);
    } catch {
      // A drop handler only settles its caller's promise; it must not stop the others.
    }
  }
}
