import type { BindParams, Database, SqlValue, Statement } from "sql.js";

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
    this.db.exec("BEGIN");
    try {
      const out = fn();
      this.db.exec("COMMIT");
      return out;
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Frees the cached statements; call before closing the database. */
  free(): void {
    for (const s of this.#cache.values()) s.free();
    this.#cache.clear();
  }
}
