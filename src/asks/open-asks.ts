/**
 * The asks open in this process (docs/PROTOCOL.md §11). The process that runs a turn holds its
 * asks and is their single arbiter: the first answer, from any device of any process, wins; the
 * others learn the outcome that stands. Expiry, `/stop`, deletion and shutdown resolve them too.
 * @module
 */
import { newId } from "../support/id-generator.js";
import type { ResolvedOptions } from "../options/options.js";
import type { TurnOptions, TurnServices } from "../turn/turn-services.js";
import type { Respondent } from "../outbox/outbox.js";
import type { Owner } from "../protocol/ids.js";
import type { LaneTurn } from "../turn/lane-turn.js";
import type { Ask, AskAnswer } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import {
  ASK_LIMITS,
  answeredAsk,
  askOffer,
  askPush,
  openingFrames,
  pickerSpec,
  resolvedFrame,
  type PickerSpec,
} from "./ask-shapes.js";
import type { AnsweredAsk } from "../contracts/records.js";
import { laneModelChange } from "./lane-model.js";
import type { ResolvedAsk } from "../push/retraction.js";
import { SUPERSEDED, untilApplied } from "../storage/read-decide-commit.js";
import type { ClockTimer } from "../support/clock.js";

/** `setTimeout` fires at once past 2^31 - 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;
/** Resolved asks remembered, so a late answer learns the outcome without reading the outbox. */
const RECENT_MAX = 1_000;

/** What the open-asks registry uses. */
export interface AskRegistryServices extends TurnServices {
  readonly options: TurnOptions & Pick<ResolvedOptions, "askExpiresMs" | "laneLock">;
}

/** An ask waiting for its answer. */
export interface OpenAsk {
  readonly owner: Owner;
  readonly spec: PickerSpec;
  readonly turn: LaneTurn;
  readonly opened: number;
  finish(answer: AskAnswer): void;
  timer: ClockTimer | undefined;
  stopListening(): void;
}

/** Who receives the `picker.resolved` response (the rest get the broadcast). */
export type Responder = Respondent;

/** The outcome an aborted turn gives its asks. */
function abortOutcome(turn: LaneTurn): AskAnswer["outcome"] {
  return turn.reason === "shutdown" ? "interrupted" : "cancelled";
}

/** An owner-scoped key, so ids never meet across owners. */
function key(owner: Owner, pickerId: string): string {
  return `${owner}\u0000${pickerId}`;
}

/** The registry of one gateway process. */
export class OpenAsks {
  readonly #services: AskRegistryServices;
  readonly #open = new Map<string, OpenAsk>();
  readonly #recent = new Map<string, Promise<Record<string, unknown>>>();
  /** Asks past the bounds check and not yet open (their id is being made): they count against the bounds. */
  readonly #reserved = new Set<{ owner: Owner; lane: Lane }>();
  /** Stores of `picker.resolved` still in flight, by turn: the answer's end waits for them. */
  readonly #storing = new Map<LaneTurn, Set<Promise<unknown>>>();
  /** Called when an owner gets its first open ask here and when its last one closes. */
  onOwner: ((owner: Owner, open: boolean) => Promise<void> | void) | undefined;

  constructor(services: AskRegistryServices) {
    this.#services = services;
  }

  /** The open ask with this id, if this process holds it. */
  get(owner: Owner, pickerId: string): OpenAsk | undefined {
    return this.#open.get(key(owner, pickerId));
  }

  /**
   * The `picker.resolved` payload of an ask resolved here lately, once it names the device that
   * answered: every answer that lost gets the same payload as the one that won.
   */
  standing(owner: Owner, pickerId: string): Promise<Record<string, unknown>> | undefined {
    return this.#recent.get(key(owner, pickerId));
  }

  /** Open asks of a lane, newest last; of one kind when given. */
  inLane(owner: Owner, lane: Lane, kind?: Ask["kind"]): OpenAsk[] {
    return [...this.#open.values()].filter(
      (a) =>
        a.owner === owner &&
        a.spec.chat_id === lane.chat_id &&
        a.spec.thread_id === lane.thread_id &&
        (!kind || a.spec.kind === kind),
    );
  }

  /** The owner's open asks in this process, oldest first. */
  ofOwner(owner: Owner): OpenAsk[] {
    return [...this.#open.values()].filter((a) => a.owner === owner);
  }

  /**
   * True when one more ask of the owner in the lane would pass the bounds of docs/PROTOCOL.md §11.1,
   * counting the asks reserved but not open yet.
   */
  #withinBounds(owner: Owner, lane: Lane): boolean {
    const sameLane = (l: Lane) => l.chat_id === lane.chat_id && l.thread_id === lane.thread_id;
    const reserved = [...this.#reserved].filter((r) => r.owner === owner);
    const inLane = this.inLane(owner, lane).length + reserved.filter((r) => sameLane(r.lane)).length;
    const ofOwner = [...this.#open.values()].filter((a) => a.owner === owner).length + reserved.length;
    return inLane < ASK_LIMITS.openPerLane && ofOwner < ASK_LIMITS.openPerOwner;
  }

  /** True when the owner has an open ask in this process. */
  holds(owner: Owner): boolean {
    for (const a of this.#open.values()) if (a.owner === owner) return true;
    return false;
  }

  /**
   * Ask the person during `turn` and wait for the answer. Rejects with TypeError for a request
   * the protocol cannot show; otherwise resolves, also when the ask expires or the turn ends.
   */
  async ask(owner: Owner, lane: Lane, turn: LaneTurn, request: Ask): Promise<AskAnswer> {
    const services = this.#services;
    if (turn.controller.signal.aborted) return { outcome: abortOutcome(turn) };
    if (!this.#withinBounds(owner, lane)) {
      services.log.warn(
        `ask refused: too many open asks (at most ${ASK_LIMITS.openPerLane} per lane, ${ASK_LIMITS.openPerOwner} per owner)`,
      );
      return { outcome: "cancelled" };
    }
    const wanted = request?.expiresInMs ?? services.options.askExpiresMs;
    const lifetime = Math.min(
      Number.isFinite(wanted) && wanted > 0 ? wanted : services.options.askExpiresMs,
      ASK_LIMITS.expiresMaxMs,
    );
    // Reserved in the step that checked the bounds: asks opened at the same moment all await below.
    const slot = { owner, lane };
    this.#reserved.add(slot);
    let spec: PickerSpec;
    let opened: number;
    try {
      // The outbox position goes into the id, so another process finds the stored card quickly.
      const { last } = await services.storage.outboxBounds(owner);
      opened = services.now();
      spec = pickerSpec(request, {
        ...lane,
        picker_id: newId(`pk${last.toString(36)}`),
        message_id: turn.answer ?? "",
        expires_at: opened + lifetime,
      });
    } finally {
      this.#reserved.delete(slot);
    }
    let finish!: (answer: AskAnswer) => void;
    const answered = new Promise<AskAnswer>((resolve) => (finish = resolve));
    const onAbort = () => void this.resolve(owner, spec.picker_id, { outcome: abortOutcome(turn) });
    const entry: OpenAsk = {
      owner,
      spec,
      turn,
      opened,
      finish,
      timer: undefined,
      stopListening: () => turn.controller.signal.removeEventListener("abort", onAbort),
    };
    const first = !this.holds(owner);
    this.#open.set(key(owner, spec.picker_id), entry);
    turn.beforeEnd ??= () => this.#settleTurn(turn);
    try {
      if (first) await this.onOwner?.(owner, true);
      await services.store(owner, {}, openingFrames(spec, opened));
    } catch (error) {
      this.#open.delete(key(owner, spec.picker_id));
      if (!this.holds(owner)) await this.onOwner?.(owner, false);
      throw error;
    }
    services.pushIfAway(owner, askPush(spec), request.confirmInApp === true ? undefined : askOffer(spec));
    turn.onAsk?.(true);
    entry.timer = services.options.clock.setTimeout(
      () => void this.resolve(owner, spec.picker_id, { outcome: "expired" }),
      Math.min(lifetime, MAX_TIMER_MS),
    );
    turn.controller.signal.addEventListener("abort", onAbort, { once: true });
    // Aborted while the card was being stored: the listener above came too late.
    if (turn.controller.signal.aborted) onAbort();
    return answered;
  }

  /**
   * Resolve an open ask held here; the first call wins. Resolves with the stored
   * `picker.resolved` payload, or undefined when this process holds no such open ask.
   */
  resolve(
    owner: Owner,
    pickerId: string,
    answer: AskAnswer,
    deviceId?: string,
    respondTo?: Responder,
  ): Promise<Record<string, unknown>> | undefined {
    const entry = this.#open.get(key(owner, pickerId));
    if (!entry) return undefined;
    // Decided here, synchronously: whatever comes after finds the ask gone.
    this.#open.delete(key(owner, pickerId));
    this.#services.options.clock.clearTimeout(entry.timer);
    entry.stopListening();
    const frame = resolvedFrame(entry.spec, answer, deviceId);
    // Kept on the answer in the order the asks ended (docs/PROTOCOL.md §14.5).
    const record = answeredAsk(entry.spec, answer, deviceId, this.#services.now());
    entry.turn.asks ??= [];
    entry.turn.asks.push(record);
    // The device's name is looked up after the decision, which must be synchronous; until it is
    // in, the answers that lost wait for it rather than get the payload without it.
    const named = this.#nameDevice(owner, record, frame.payload).then(() => frame.payload);
    this.#remember(owner, pickerId, named);
    const work = this.#store(entry, answer, frame, respondTo, named);
    let storing = this.#storing.get(entry.turn);
    if (!storing) {
      storing = new Set();
      this.#storing.set(entry.turn, storing);
    }
    storing.add(work);
    void work.finally(() => storing.delete(work));
    // The other targets that were pushed this ask are told it is over (docs/PROTOCOL.md §21).
    void work.then(
      () => this.#services.retractPush(owner, entry.spec.title, frame.payload as ResolvedAsk),
      () => undefined,
    );
    return work.then(() => frame.payload);
  }

  async #store(
    entry: OpenAsk,
    answer: AskAnswer,
    frame: ReturnType<typeof resolvedFrame>,
    respondTo: Responder | undefined,
    named: Promise<unknown>,
  ): Promise<void> {
    const services = this.#services;
    const { owner, spec, turn } = entry;
    try {
      await named;
      const chosen = spec.kind === "model" && answer.outcome === "selected" ? answer.option_id : undefined;
      await untilApplied(async () => {
        const change = chosen ? await laneModelChange(services, owner, spec, chosen) : {};
        return (await services.store(owner, change, [frame], respondTo)).length ? undefined : SUPERSEDED;
      });
    } catch (error) {
      services.log.warn("storing an ask's outcome failed", error);
      respondTo?.session.respond({ type: frame.type, payload: frame.payload }, respondTo.requestId);
    } finally {
      if (!this.holds(owner)) await Promise.resolve(this.onOwner?.(owner, false)).catch(() => undefined);
      turn.onAsk?.(false);
      entry.finish(answer);
    }
  }

  /** Who answered, by the name the device gave: "Approved by Pixel 8" on every device. */
  async #nameDevice(owner: Owner, record: AnsweredAsk, payload: Record<string, unknown>): Promise<void> {
    if (!record.device_id) return;
    const device = await this.#services.storage.getDevice(owner, record.device_id).catch(() => undefined);
    if (!device?.device_name) return;
    record.device_name = device.device_name;
    payload.device_name = device.device_name;
  }

  #remember(owner: Owner, pickerId: string, payload: Promise<Record<string, unknown>>): void {
    this.#recent.set(key(owner, pickerId), payload);
    if (this.#recent.size > RECENT_MAX) this.#recent.delete(this.#recent.keys().next().value!);
  }

  /** Before the turn's final frame: asks it left open are cancelled and every outcome is stored. */
  async #settleTurn(turn: LaneTurn): Promise<void> {
    for (const entry of [...this.#open.values()]) {
      if (entry.turn === turn) void this.resolve(entry.owner, entry.spec.picker_id, { outcome: abortOutcome(turn) });
    }
    await Promise.allSettled([...(this.#storing.get(turn) ?? [])]);
    this.#storing.delete(turn);
  }
}
