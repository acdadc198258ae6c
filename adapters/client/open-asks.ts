/**
 * The asks still waiting for an answer (docs/PROTOCOL.md §11), as the client learns of them from
 * picker frames and `picker.resolved`, live and through sync, kept in an {@link OpenAsksStore} so
 * that a page reload still shows the cards whose frames came before the stored cursor.
 * @module
 */
import type {
  OpenAsk,
  PickerApprovalPayload,
  PickerConfirmPayload,
  PickerModelPayload,
  PickerResolvedPayload,
} from "./frames.js";
import type { ServerFrame } from "chat-gateway/protocol";

/**
 * Keeps the open asks between page loads, next to the sync cursor. `get` answers null or
 * undefined when there is nothing kept; a failure of either method is ignored.
 */
export interface OpenAsksStore {
  get(): unknown;
  set(asks: OpenAsk[]): void | Promise<void>;
}

/** Open asks kept in memory only (the default outside a browser). */
export function memoryOpenAsksStore(): OpenAsksStore {
  let kept: OpenAsk[] = [];
  return {
    get: () => kept,
    set: (asks) => {
      kept = asks;
    },
  };
}

/** Open asks kept in `localStorage` under `key` (the default in a browser). */
export function localStorageOpenAsksStore(key: string): OpenAsksStore {
  return {
    get() {
      const raw = globalThis.localStorage?.getItem(key);
      return raw ? (JSON.parse(raw) as unknown) : undefined;
    },
    set(asks) {
      if (asks.length === 0) globalThis.localStorage?.removeItem(key);
      else globalThis.localStorage?.setItem(key, JSON.stringify(asks));
    },
  };
}

/** More than this many open asks is a misbehaving gateway; the oldest are dropped. */
const MAX_OPEN = 200;
/** Ids of resolved asks remembered, so a picker frame replayed after its resolution stays closed. */
const MAX_RESOLVED = 1000;

/** The picker frames, as a kind. */
const KINDS = { "picker.approval": "approval", "picker.confirm": "confirm", "picker.model": "model" } as const;

/** The frame types that make an ask, and their payloads. */
export type PickerFrame =
  | { type: "picker.approval"; payload: PickerApprovalPayload }
  | { type: "picker.confirm"; payload: PickerConfirmPayload }
  | { type: "picker.model"; payload: PickerModelPayload };

/** The open asks of one client. */
export class OpenAsks {
  readonly #store: OpenAsksStore;
  readonly #open = new Map<string, OpenAsk>();
  readonly #resolved = new Set<string>();

  /** Reads what the store kept; the client then syncs, and `picker.resolved` frames close what ended meanwhile. */
  constructor(store: OpenAsksStore) {
    this.#store = store;
    for (const ask of loaded(store)) this.#open.set(ask.picker_id, ask);
  }

  /** Every open ask, oldest first. */
  list(): OpenAsk[] {
    return [...this.#open.values()];
  }

  /** One open ask, or undefined when it is not open (never seen, or resolved). */
  get(pickerId: string): OpenAsk | undefined {
    return this.#open.get(pickerId);
  }

  /** Opens or closes an ask for a picker frame or `picker.resolved`; true when the open asks changed. */
  track(frame: ServerFrame): boolean {
    switch (frame.type) {
      case "picker.approval":
      case "picker.confirm":
      case "picker.model":
        return this.opened(frame as PickerFrame);
      case "picker.resolved":
        return this.resolved(frame.payload as PickerResolvedPayload) !== undefined;
      default:
        return false;
    }
  }

  /** A picker frame arrived; true when it opened an ask. */
  opened(frame: PickerFrame): boolean {
    const id = frame.payload?.picker_id;
    if (typeof id !== "string" || this.#resolved.has(id) || this.#open.has(id)) return false;
    this.#open.set(id, { kind: KINDS[frame.type], ...frame.payload } as OpenAsk);
    if (this.#open.size > MAX_OPEN) this.#open.delete(this.#open.keys().next().value!);
    this.#save();
    return true;
  }

  /** `picker.resolved` arrived; the ask that it closed, if it was open here. */
  resolved(payload: PickerResolvedPayload): OpenAsk | undefined {
    const id = payload?.picker_id;
    if (typeof id !== "string") return undefined;
    this.#resolved.add(id);
    if (this.#resolved.size > MAX_RESOLVED) this.#resolved.delete(this.#resolved.values().next().value!);
    const ask = this.#open.get(id);
    if (ask === undefined) return undefined;
    this.#open.delete(id);
    this.#save();
    return ask;
  }

  /**
   * The gateway no longer has the frames after the cursor (a sync `reset`): a resolution may be
   * among the lost frames, so asks past their expiry are dropped as stale; the rest may still be
   * open and can be answered (a wrong guess is answered `not_found` or with the outcome that stands).
   */
  dropExpired(now: number): OpenAsk[] {
    const dropped = this.list().filter((ask) => ask.expires_at <= now);
    for (const ask of dropped) this.#open.delete(ask.picker_id);
    if (dropped.length > 0) this.#save();
    return dropped;
  }

  #save(): void {
    try {
      Promise.resolve(this.#store.set(this.list())).catch(() => undefined);
    } catch {
      // A failing store must not break delivery; the next change tries again.
    }
  }
}

/** What the store kept, reduced to well-formed asks. */
function loaded(store: OpenAsksStore): OpenAsk[] {
  let kept: unknown;
  try {
    kept = store.get();
  } catch {
    return [];
  }
  if (!Array.isArray(kept)) return [];
  return kept
    .filter(
      (ask): ask is OpenAsk =>
        ask !== null &&
        typeof ask === "object" &&
        typeof ask.picker_id === "string" &&
        typeof ask.chat_id === "string" &&
        typeof ask.expires_at === "number" &&
        (ask.kind === "approval" || ask.kind === "confirm" || ask.kind === "model"),
    )
    .slice(-MAX_OPEN);
}
