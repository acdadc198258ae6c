/**
 * Cron expressions of schedules (docs/PROTOCOL.md §17), read by `croner`: 5 fields, or 6 with
 * seconds first, in an IANA time zone. `croner` rather than a parser of our own: it has no
 * dependencies and gets time zones and daylight-saving shifts right, which hand-written cron
 * parsers are known to get wrong.
 * @module
 */
import { Cron } from "croner";
import { GatewayError } from "../protocol/errors.js";

/** Parsed patterns by `cron + tz`, so a tick does not parse every schedule again. */
const parsed = new Map<string, Cron>();
const PARSED_KEPT = 1_000;

/** The longest cron expression taken, characters. */
const MAX_CRON_CHARS = 200;

/** A time zone the runtime knows (IANA name), else why not. */
export function checkTimeZone(tz: unknown): string {
  if (typeof tz !== "string" || tz === "" || tz.length > 64)
    throw new GatewayError("unsupported", "a time zone is an IANA name such as UTC or Europe/Berlin");
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
  } catch {
    throw new GatewayError("unsupported", `unknown time zone "${tz}": use an IANA name such as UTC or Europe/Berlin`);
  }
  return tz;
}

/** The pattern of a cron expression in a time zone; a bad one is refused with the reason. */
export function cronOf(cron: unknown, tz: string): Cron {
  if (typeof cron !== "string" || cron.trim() === "" || cron.length > MAX_CRON_CHARS)
    throw new GatewayError("unsupported", `a cron expression is 1 to ${MAX_CRON_CHARS} characters`);
  const key = `${cron}\u0000${tz}`;
  const known = parsed.get(key);
  if (known) return known;
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6)
    throw new GatewayError(
      "unsupported",
      `invalid cron "${cron}": give 5 fields (minute hour day month weekday), or 6 with seconds first`,
    );
  let pattern: Cron;
  try {
    pattern = new Cron(cron, { timezone: checkTimeZone(tz), paused: true });
    pattern.nextRun(new Date());
  } catch (error) {
    throw new GatewayError(
      "unsupported",
      `invalid cron "${cron}": ${(error as Error).message.replace(/^CronPattern: /, "")}`,
    );
  }
  if (parsed.size >= PARSED_KEPT) parsed.delete(parsed.keys().next().value as string);
  parsed.set(key, pattern);
  return pattern;
}

/** The newest slot at or before `now` (unix ms), if it is after `after`; croner works in whole seconds. */
export function newestSlot(cron: string, tz: string, after: number, now: number): number | undefined {
  const pattern = cronOf(cron, tz);
  // Most ticks find nothing due: one forward step says so without the backward search.
  const first = pattern.nextRun(new Date(after));
  if (!first || first.getTime() > now) return undefined;
  // previousRuns answers slots strictly before its reference: the next whole second takes `now`'s in.
  const [slot] = pattern.previousRuns(1, new Date(Math.floor(now / 1000) * 1000 + 1000));
  const at = slot?.getTime();
  return at !== undefined && at > after && at <= now ? at : undefined;
}

/** The next slot after `now` (unix ms), or null when the pattern has none left. */
export function nextSlot(cron: string, tz: string, now: number): number | null {
  return cronOf(cron, tz).nextRun(new Date(now))?.getTime() ?? null;
}
