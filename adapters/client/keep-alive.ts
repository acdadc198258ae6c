/**
 * The keep-alive of one socket. A socket whose network went away (a phone leaving Wi-Fi, a server
 * that stopped answering) often never closes by itself: only silence tells. So a ping goes out
 * every interval; when the next one is due and nothing came since the last (no pong, no other
 * frame), that ping is missed, and {@link MISSED_PINGS} missed in a row mean the socket is dead
 * (docs/PROTOCOL.md §21: "offline" within a few intervals).
 * @module
 */

/** Pings missed in a row after which a socket counts as dead. */
export const MISSED_PINGS = 2;

/** The default of `pingIntervalMs` (ms). */
export const DEFAULT_PING_INTERVAL_MS = 25_000;

/** The longest wait for the pong of a probe (`reconnectNow` on an open socket), ms. */
export const PROBE_TIMEOUT_MS = 5_000;

/** The keep-alive of one socket, from {@link keepAlive}. */
export interface KeepAlive {
  /** Something arrived on the socket: it is alive, whatever pings are still unanswered. */
  heard(): void;
  /**
   * Check now, not at the next interval (the network or the app came back): a ping that gets no
   * answer within the interval (at most {@link PROBE_TIMEOUT_MS}) means the socket is dead.
   */
  probe(): void;
  /** No more pings (the socket closed). */
  stop(): void;
}

/**
 * Ping every `everyMs` with `ping` (which rejects when no pong came within its timeout); call
 * `dead` once when {@link MISSED_PINGS} intervals in a row heard nothing, or a probe went
 * unanswered. `ping`'s own rejections are expected and ignored: only silence counts.
 */
export function keepAlive(everyMs: number, ping: (timeoutMs: number) => Promise<unknown>, dead: () => void): KeepAlive {
  let heardSince = true;
  /** Counts everything heard, so a probe can tell whether anything came while it waited. */
  let heardCount = 0;
  let missed = 0;
  let over = false;
  const die = () => {
    if (over) return;
    over = true;
    clearInterval(timer);
    dead();
  };
  const timer = setInterval(() => {
    if (!heardSince && ++missed >= MISSED_PINGS) return die();
    if (heardSince) missed = 0;
    heardSince = false;
    // The ping's own timeout only ends its request: silence is judged at the next interval.
    ping(everyMs * (MISSED_PINGS + 1)).catch(() => undefined);
  }, everyMs);
  return {
    heard() {
      heardSince = true;
      heardCount++;
      missed = 0;
    },
    probe() {
      if (over) return;
      const before = heardCount;
      ping(Math.min(everyMs, PROBE_TIMEOUT_MS)).catch(() => {
        if (heardCount === before) die();
      });
    },
    stop() {
      over = true;
      clearInterval(timer);
    },
  };
}
