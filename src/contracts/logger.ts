/**
 * The one logging option shared by the gateway and every adapter: a {@link Logger}, defaulting to
 * the console with a prefix naming who speaks.
 * @module
 */

/** Where the gateway and its adapters write what they notice; defaults to `console` for warnings and errors. */
export interface Logger {
  info(message: string, detail?: unknown): void;
  warn(message: string, detail?: unknown): void;
  error(message: string, detail?: unknown): void;
}

const LEVELS = ["info", "warn", "error"] as const;

/**
 * A {@link Logger} on the console: warnings and errors are written with `prefix` in front, `info`
 * is dropped (the gateway's info lines are for log collectors, not a terminal).
 *
 * ```ts
 * consoleLogger("[my-app]").warn("disk almost full"); // [my-app] disk almost full
 * ```
 */
export function consoleLogger(prefix: string): Logger {
  return {
    info: () => undefined,
    warn: (message, detail) =>
      detail === undefined ? console.warn(`${prefix} ${message}`) : console.warn(`${prefix} ${message}`, detail),
    error: (message, detail) =>
      detail === undefined ? console.error(`${prefix} ${message}`) : console.error(`${prefix} ${message}`, detail),
  };
}

/**
 * The logger an adapter uses: `logger` when given, else the deprecated one-function option
 * (`legacy`, which receives warnings and errors), else {@link consoleLogger} with `prefix`.
 *
 * @param where - the constructor named in a TypeError, e.g. `"sqlJsStorage"`
 * @throws {TypeError} when `logger` lacks one of `info`, `warn`, `error`, or `legacy.value` is given
 *   and is not a function
 */
export function resolveLogger(
  where: string,
  prefix: string,
  logger: unknown,
  legacy?: { name: string; value: unknown },
): Logger {
  if (logger !== undefined) {
    const missing = LEVELS.filter(
      (level) => typeof (logger as Partial<Record<string, unknown>> | null)?.[level] !== "function",
    );
    if (typeof logger !== "object" || logger === null || missing.length > 0) {
      throw new TypeError(
        `${where}: logger must be an object with info, warn and error methods${logger !== null && typeof logger === "object" ? ` (missing ${missing.join(", ")})` : ""}`,
      );
    }
    return logger as Logger;
  }
  if (legacy !== undefined && legacy.value !== undefined) {
    if (typeof legacy.value !== "function") throw new TypeError(`${where}: ${legacy.name} must be a function`);
    const report = legacy.value as (message: string) => void;
    return { info: () => undefined, warn: (message) => report(message), error: (message) => report(message) };
  }
  return consoleLogger(prefix);
}
