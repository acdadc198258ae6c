/**
 * Stored pushes whose process is gone (docs/PROTOCOL.md §21.6): claimed and sent at start, then
 * every `recoveryIntervalMs`. A live process takes its own pushes back when they fall due, so the
 * periodic pass leaves each a short grace first and does not race it.
 * @module
 */
import type { ResolvedOptions } from "../options/options.js";
import type { AwayPush } from "./away-push.js";

/** How long past its due time a stored push is left to the process waiting on it (ms). */
export const OVERDUE_GRACE_MS = 2_000;

/** What the passes read of the gateway's options: its clock, its logger, how often. */
export type OverduePushOptions = Pick<ResolvedOptions, "now" | "clock" | "logger" | "recoveryIntervalMs">;

/**
 * Starts the passes: one at once (everything past due: a restart sends what the crash left), then
 * one every `recoveryIntervalMs` on the gateway's clock, never two at a time. Returns what stops them.
 */
export function startOverduePushes(sendOverdue: AwayPush["sendOverdue"], options: OverduePushOptions): () => void {
  const { now, clock, logger: log } = options;
  let running = false;
  const pass = (dueBy: number) => {
    if (running) return;
    running = true;
    sendOverdue(dueBy)
      .catch((error) => log.warn("push: claiming due pushes failed", error))
      .finally(() => {
        running = false;
      });
  };
  pass(now());
  const timer = clock.setInterval(() => pass(now() - OVERDUE_GRACE_MS), options.recoveryIntervalMs);
  return () => clock.clearInterval(timer);
}
