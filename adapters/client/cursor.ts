/**
 * Where the client keeps its sync cursor between connections (and, in a browser, page loads).
 * @module
 */

/**
 * Keeps the newest `seq` the client has seen, so that every (re)connect syncs from it.
 * `get` answers null or undefined when the client never synced: it then starts from the
 * gateway's current cursor (a new device fetches history instead of replaying the outbox).
 * `set` is called for every stored frame; it may be synchronous or return a promise, and a
 * failure is ignored (the next frame tries again).
 */
export interface CursorStore {
  get(): number | null | undefined | Promise<number | null | undefined>;
  set(cursor: number): void | Promise<void>;
}

/** A cursor kept in memory only (the default outside a browser). */
export function memoryCursorStore(initial?: number): CursorStore {
  let cursor = initial;
  return {
    get: () => cursor,
    set: (value) => {
      cursor = value;
    },
  };
}

/** A cursor kept in `localStorage` under `key` (the default in a browser). */
export function localStorageCursorStore(key: string): CursorStore {
  return {
    get() {
      const raw = globalThis.localStorage?.getItem(key);
      const value = raw === null || raw === undefined ? NaN : Number(raw);
      return Number.isInteger(value) && value >= 0 ? value : undefined;
    },
    set(value) {
      globalThis.localStorage?.setItem(key, String(value));
    },
  };
}

/** True when `localStorage` is usable (a browser, not a Node process). */
export function hasLocalStorage(): boolean {
  try {
    return typeof window !== "undefined" && typeof window.localStorage !== "undefined" && window.localStorage !== null;
  } catch {
    return false;
  }
}
