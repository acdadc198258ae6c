import { resolveLogger, type Logger } from "chat-gateway";

/**
 * A ready sql.js module, as `initSqlJs()` resolves it (sql.js's `SqlJsStatic`), described by what
 * the storage takes from it: sql.js's own types need the DOM library, and naming them here broke
 * the type check of a project without it.
 */
export interface SqlJsModule {
  readonly Database: new (data?: ArrayLike<number> | Buffer | null) => object;
}

/** Options of {@link sqlJsStorage}. */
export interface SqlJsStorageOptions {
  /**
   * Data folder; created if missing. One process owns it at a time. It and every file in it are
   * made private to the owner (0700 and 0600), whatever the umask; an existing folder open to
   * other users is tightened with a warning.
   */
  dir: string;
  /**
   * A ready sql.js module (from `initSqlJs()`). A module cannot move to another process, so giving
   * one runs the database on the calling thread, as {@link inProcess} does. Default: the database
   * process initialises its own.
   */
  sqlJs?: SqlJsModule;
  /**
   * Runs the database on the calling thread instead of in a process of its own. It saves a process
   * (about 50 MB and a start-up of 100 ms or so), but every export and every growth of the database
   * then stalls this thread (1 to 2 s at a million messages) and the process holds the database up
   * to twice. For tests and small stores. Default false. (The processes take Node flags from the
   * environment variable `CHAT_GATEWAY_SQLJS_EXEC_ARGV`: `--liftoff-only` starts one in about a
   * third of the CPU time, for short-lived storages such as a test suite's, at the price of slower
   * queries.)
   */
  inProcess?: boolean;
  /**
   * A snapshot is taken once the journal since the last one exceeds this fraction of the last
   * snapshot's size, within {@link snapshotMinBytes} and {@link snapshotMaxBytes}. The fraction
   * keeps the export's cost per write constant; the bounds keep small databases from snapshotting
   * constantly and large ones from replaying for long at start (about 100 µs per journaled write).
   * Default 0.25.
   */
  snapshotRatio?: number;
  /** Journal bytes below which no snapshot is taken (except on close and by time). Default 8 MiB. */
  snapshotMinBytes?: number;
  /** Journal bytes at which a snapshot is always taken, bounding start-up replay. Default 16 MiB. */
  snapshotMaxBytes?: number;
  /** Also snapshot a non-empty journal this often, milliseconds; 0 turns it off. Default 10 minutes. */
  snapshotIntervalMs?: number;
  /**
   * Called once the database process has died and could not be brought back: it is restarted on
   * the same folder when it dies, up to 3 times a minute, and gave up after that, or when a
   * restart failed 3 times. Every call of the storage then fails (`internal`), so the process
   * should exit, non-zero, for its process manager (systemd, Docker) to start it afresh; close the
   * gateway first to end its connections cleanly. Default: the error is logged and thrown where
   * nobody catches it, which ends the process with exit code 1, as an `error` event nobody
   * listens to does. Not called with {@link inProcess}, where the database dies with the process.
   */
  onFatal?: (error: Error) => void;
  /**
   * Receives recoverable problems (a dropped journal tail, a skipped damaged snapshot) as warnings.
   * Default: the console, prefixed `chat-gateway/storage/sqljs:`.
   */
  logger?: Logger;
  /**
   * Receives the warnings {@link SqlJsStorageOptions.logger} would.
   * @deprecated use logger
   */
  onWarning?: (message: string) => void;
}

function positive(name: string, value: number | undefined, allowZero = false): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new TypeError(
      `sqlJsStorage: ${name} must be a ${allowZero ? "non-negative" : "positive"} number, got ${String(value)}`,
    );
  }
}

/** Throws a TypeError naming the first option that is not usable; returns the logger to use. */
export function checkOptions(options: SqlJsStorageOptions): Logger {
  if (!options || typeof options.dir !== "string" || options.dir === "") {
    throw new TypeError("sqlJsStorage: options.dir must be the path of the data folder");
  }
  positive("snapshotMinBytes", options.snapshotMinBytes);
  positive("snapshotRatio", options.snapshotRatio);
  positive("snapshotMaxBytes", options.snapshotMaxBytes);
  positive("snapshotIntervalMs", options.snapshotIntervalMs, true);
  if (options.onFatal !== undefined && typeof options.onFatal !== "function")
    throw new TypeError("sqlJsStorage: onFatal must be a function");
  return resolveLogger("sqlJsStorage", "chat-gateway/storage/sqljs:", options.logger, {
    name: "options.onWarning",
    value: options.onWarning,
  });
}
