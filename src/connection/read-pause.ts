/**
 * When a connection stops reading its socket (docs/PROTOCOL.md §2.4), for either of two reasons at
 * once: binary messages waiting past their bound (`binary-backlog.ts`), and a moment after a frame
 * refused for the budget, so that a flood past it is read at about the budget's pace rather than
 * the wire's. A refused frame costs no work but its read, yet eight connections sending 240 kB
 * frames as fast as the socket took them held another owner's pings up to 360 ms. The socket reads
 * again once neither holds it. Kept beside the connection, not in it: an idle one holds nothing.
 * @module
 */
import type { Connection } from "../contracts/connection.js";
import type { Clock } from "../support/clock.js";

/** What can stop reading: a connection whose transport can pause (the ws adapter's can). */
export type Pausable = Pick<Connection, "pause" | "resume">;

/** The longest pause after one refused frame (ms). */
const MAX_THROTTLE_MS = 1_000;

const holds = new WeakMap<Pausable, number>();
const throttled = new WeakSet<Pausable>();

/** One more reason not to read `conn`; the first pauses it. */
export function holdReads(conn: Pausable): void {
  const held = holds.get(conn) ?? 0;
  holds.set(conn, held + 1);
  if (held === 0) conn.pause?.();
}

/** One reason fewer; the last resumes reading. */
export function releaseReads(conn: Pausable): void {
  const held = (holds.get(conn) ?? 1) - 1;
  if (held > 0) return void holds.set(conn, held);
  holds.delete(conn);
  conn.resume?.();
}

/**
 * A frame of `conn` was refused for the budget: reading pauses for `ms` (at most a second), the
 * time its own budget takes to earn the frame back. Frames already read are judged as they come.
 */
export function throttleReads(clock: Clock, conn: Pausable, ms: number): void {
  if (conn.pause === undefined || throttled.has(conn)) return;
  throttled.add(conn);
  holdReads(conn);
  clock.setTimeout(
    () => {
      throttled.delete(conn);
      releaseReads(conn);
    },
    Math.min(ms, MAX_THROTTLE_MS),
    true,
  );
}
