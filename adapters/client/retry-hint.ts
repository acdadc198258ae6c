/**
 * The gateway's retry hint: a hello it shed because too many were in progress is closed 1013 with
 * the reason `retry_after_ms=<n>` (docs/PROTOCOL.md §18.5). The client comes back after it, spread
 * by a jitter, so the devices it shed together do not return together.
 * @module
 */

/** The longest hint honoured (ms): a gateway cannot park a client for longer than this. */
const MAX_HINT_MS = 60_000;

/** The hint of a close, in milliseconds, or undefined when it carries none. */
export function retryHint(code: number, reason: string): number | undefined {
  if (code !== 1013) return undefined;
  const match = /^retry_after_ms=(\d{1,9})$/.exec(reason);
  return match ? Math.min(Number(match[1]), MAX_HINT_MS) : undefined;
}

/** The wait for a hint: at least the hint, plus up to half of it again at random. */
export function hintedDelay(hintMs: number): number {
  return Math.round(hintMs * (1 + Math.random() / 2));
}
