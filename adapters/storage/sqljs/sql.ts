import type { BindParams, Database, SqlValue, Statement } from "sql.js";

/** A numeric `PRAGMA` of `db` (`page_count`, `page_size`, `freelist_count`, ...); 0 when it has none. */
export function pragmaNumber(db: Database, name: string): number {
  return Number(db.exec(`PRAGMA ${name}`)[0]?.values[0]?.[0] ?? 0);
}

/**
 * Sets up a database that lives only in memory, behind the storage's own journal. SQLite's
 * rollback journal then only has to undo a failed transaction, which it can do from memory, and
 * syncing the in-memory file does nothing for durability. SQLite's defaults (the rollback journal
 * as a file beside it, `synchronous = FULL`) made a write 1.8 times as expensive at a million
 * messages (bench/RESULTS.md, "sql.js internals").
 */
export function tuneInMemory(db: Database): void {
  // Exclusive locking: nothing else ever opens this in-memory file, and in the default mode
  // SQLite looks for a hot journal (a failing stat, thrown and caught as a JS exception in
  // sql.js's file system) at the start of every read; that was a quarter of the database
  // process's time while devices said hello (bench/capacity.ts).
  db.exec("PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE");
}

/** Prepared statements cached by their text, since sql.js parses SQL on every `exec`. */
export class Sql {
  readonly #cache = new Map<string, Statement>();

  constructor(readonly db: Database) {}

  #stmt(sql: string): Statement {
    let s = this.#cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.#cache.set(sql, s);
    }
    return s;
  }

  run(sql: string, params: BindParams = []): void {
    const s = this.#stmt(sql);
    try {
      s.run(params);
    } finally {
      s.reset();
    }
  }

  all(sql: string, params: BindParams = []): SqlValue[][] {
    const s = this.#stmt(sql);
    const rows: SqlValue[][] = [];
    try {
      s.bind(params);
      while (s.step()) rows.push(s.get());
    } finally {
      s.reset();
    }
    return rows;
  }

  /**
   * Rows in order until those read hold `maxBytes` (by `size`), at least one; `more` tells whether
   * a row was left unread. Rows past the bound are never copied out of the database, so a page of
   * long rows costs its bound, not its row count.
   */
  allWithin(
    sql: string,
    params: BindParams,
    maxBytes: number,
    size: (row: SqlValue[]) => number,
  ): { rows: SqlValue[][]; more: boolean } {
    const s = this.#stmt(sql);
    const rows: SqlValue[][] = [];
    let bytes = 0;
    try {
      s.bind(params);
      while (s.step()) {
        if (bytes >= maxBytes) return { rows, more: true };
        const row = s.get();
        rows.push(row);
        bytes += size(row);
      }
      return { rows, more: false };
    } finally {
      s.reset();
    }
  }

  get(sql: string, params: BindParams = []): SqlValue[] | undefined {
    const s = this.#stmt(sql);
    try {
      s.bind(params);
      return s.step() ? s.get() : undefined;
    } finally {
      s.reset();
    }
  }

  /** Runs `fn` in one transaction: all of it is applied, or none of it. */
  transaction<T>(fn: () => T): T {
    this.run("BEGIN");
    try {
      const out = fn();
      this.run("COMMIT");
      return out;
    } catch (error) {
      this.run("ROLLBACK");
      throw error;
    }
  }

  /** Runs `fn` inside a savepoint of the current transaction; on failure only its work is undone. */
  savepoint<T>(fn: () => T): T {
    this.run("SAVEPOINT op");
    try {
      const out = fn();
      this.run("RELEASE op");
      return out;
    } catch (error) {
      this.run("ROLLBACK TO op");
      this.run("RELEASE op");
      throw error;
    }
  }

  /** Frees the cached statements; call before closing the database. */
  free(): void {
    for (const s of this.#cache.values()) s.free();
    this.#cache.clear();
  }
}
