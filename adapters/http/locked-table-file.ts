/**
 * A table of records in a private JSON file shared by processes (docs/PROTOCOL.md §16, §19.1):
 * the paired devices' `devices.json` and the API keys' `keys.json` beside the users file. Every
 * change is a locked read-modify-write; lookups read an in-memory copy kept current.
 * @module
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "./atomic-file.js";
import { withFileLock } from "./file-lock.js";
import { readPrivateText } from "./private-file.js";

/** What a table file holds and how it is named. */
export interface TableFileShape<R> {
  /** The file's one array field, such as `"devices"`. */
  field: string;
  /** How refusals name the file and what to look over in it, such as `"device store"` and `"the devices"`. */
  what: string;
  contents: string;
  /** Whether a parsed entry is a well-formed record. */
  isRecord(value: unknown): value is R;
  /** The key of a record in the table (a token digest). */
  keyOf(record: R): string;
}

/** A table file; see {@link lockedTableFile}. */
export interface LockedTableFile<R> {
  /** The table as of the file now (read again when it changed); never waits for a write. */
  read(): Promise<Map<string, R>>;
  /** Applies one change to the file's current content under the cross-process lock. */
  change<T>(apply: (draft: Map<string, R>) => Promise<T> | T): Promise<T>;
  /** Calls `listener` with the key of each record gone from the file, looking every 250 ms while subscribed. */
  onGone(listener: (key: string) => void): () => void;
}

/** How often the file is looked at (one `stat`) while someone listens for removals, in milliseconds. */
const POLL_MS = 250;

/**
 * The records a file holds; a missing file holds none. A malformed one is an error: it must not
 * quietly forget records. So is one that others may write: they could add a record of any user.
 */
async function readTable<R>(file: string, shape: TableFileShape<R>): Promise<Map<string, R>> {
  let text: string;
  try {
    text = await readPrivateText(file, shape.what, shape.contents);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    throw error;
  }
  const records = (JSON.parse(text) as Record<string, unknown> | null)?.[shape.field];
  if (!Array.isArray(records) || !records.every((r) => shape.isRecord(r)))
    throw new Error(`${shape.what} ${file} is malformed`);
  return new Map(records.map((r) => [shape.keyOf(r), r]));
}

async function signature(file: string): Promise<string> {
  try {
    const s = await fs.stat(file);
    // ctime too: a chmod that lets others write the file must be noticed before anything they write.
    return `${s.ino}:${s.mtimeMs}:${s.ctimeMs}:${s.size}`;
  } catch {
    return "missing";
  }
}

/**
 * A table in a JSON file (mode 0600, replaced atomically). Every change is a read-modify-write
 * under the lock file `<file>.lock` shared with every other process using the file (the CLI, a
 * second server): the file is read again under the lock, the one change applied, the result
 * written to a temp file, fsynced and renamed over it. So a removal by the CLI is never undone by
 * a change of the server. Reads use an in-memory copy swapped in after each write and re-read
 * when the file changed. A change that leaves the table as it was costs no write.
 */
export function lockedTableFile<R>(file: string, shape: TableFileShape<R>): LockedTableFile<R> {
  const text = (table: Map<string, R>) => `${JSON.stringify({ [shape.field]: [...table.values()] }, null, 2)}\n`;
  let table = new Map<string, R>();
  let seen = "";
  /** Grows with each copy swapped in: a read of the file that started before a newer swap is dropped. */
  let version = 0;
  let loading: Promise<void> | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const listeners = new Set<(key: string) => void>();
  let timer: NodeJS.Timeout | undefined;

  function swap(next: Map<string, R>, signed: string): void {
    const gone = [...table.keys()].filter((key) => !next.has(key));
    table = next;
    seen = signed;
    version++;
    for (const key of gone) for (const listener of [...listeners]) listener(key);
  }

  function load(): Promise<void> {
    loading ??= (async () => {
      const started = version;
      const signed = await signature(file);
      if (signed === seen) return;
      const next = await readTable(file, shape);
      if (version === started) swap(next, signed);
    })().finally(() => {
      loading = undefined;
    });
    return loading;
  }

  function change<T>(apply: (draft: Map<string, R>) => Promise<T> | T): Promise<T> {
    const run = queue.then(async () => {
      await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      return withFileLock(`${file}.lock`, async () => {
        const draft = await readTable(file, shape);
        const before = text(draft);
        const result = await apply(draft);
        if (text(draft) !== before) await writeFileAtomic(file, text(draft));
        swap(draft, await signature(file));
        return result;
      });
    });
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    async read() {
      await load();
      return table;
    },
    change,
    onGone(listener) {
      listeners.add(listener);
      timer ??= setInterval(() => void load().catch(() => undefined), POLL_MS);
      timer.unref();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && timer !== undefined) {
          clearInterval(timer);
          timer = undefined;
        }
      };
    },
  };
}
