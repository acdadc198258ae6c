/**
 * Search on PostgreSQL against sql.js on the same generated history (bench/corpus.ts): a rare word
 * (10 matches), a common word (1 message in 5) across all chats, the common word in one chat.
 *
 *   node --import tsx bench/search.ts                  # 10,000 and 1,000,000 messages
 *   node --import tsx bench/search.ts --quick          # 10,000 messages
 *   node --import tsx bench/search.ts --sizes=100000
 *   node --import tsx bench/search.ts --keep           # keep the filled PostgreSQL schema and reuse it next run
 *   node --import tsx bench/search.ts --postgres-only  # no sql.js runs (compare with an earlier run's)
 *
 * sql.js is filled with batched commits of 1,000 messages, PostgreSQL with the same rows inserted
 * 5,000 at a time (see {@link insertAll}), then PostgreSQL's statistics are
 * refreshed with ANALYZE (what autovacuum does after a bulk load). Then each query runs on both
 * storages after a warm-up, one search after another, the storages taking turns of 10 runs (see
 * {@link measure}), so that both see the same spells of a shared machine. Prints a Markdown table
 * and the raw JSON.
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { SearchQuery, Storage } from "chat-gateway/storage";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { foldedWords, tsvectorText } from "../adapters/storage/postgres/search.js";
import { CHATS, COMMON, message, OWNER, percentiles, RARE } from "./corpus.js";

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const args = process.argv.slice(2);
const sizesArg = args.find((a) => a.startsWith("--sizes="));
/** Keep each size's PostgreSQL schema (`bench_search_keep_<size>`) and reuse it when it holds that many messages. */
const keep = args.includes("--keep");
const postgresOnly = args.includes("--postgres-only");
const sizes = sizesArg
  ? sizesArg.slice(8).split(",").map(Number)
  : args.includes("--quick")
    ? [10_000]
    : [10_000, 1_000_000];

const QUERIES: Array<{ name: string; runs: number; query: (k: number) => SearchQuery }> = [
  { name: "rare word (10 matches), all chats", runs: 300, query: () => ({ query: RARE, scope: "all", limit: 20 }) },
  {
    name: "common word (1 in 5 messages), all chats",
    runs: 200,
    query: () => ({ query: COMMON, scope: "all", limit: 20 }),
  },
  {
    name: "common word, one chat",
    runs: 200,
    query: (k) => ({ query: COMMON, scope: "chat", chat_id: `chat${k % CHATS}`, limit: 20 }),
  },
  {
    name: "two words (common + rare prefix), all chats",
    runs: 200,
    query: () => ({ query: `${COMMON} quet`, scope: "all", limit: 20 }),
  },
];

interface Row {
  storage: string;
  messages: number;
  fillPerSecond: number;
  queries: Record<string, { p50: number; p99: number; perSecond: number; hits: number }>;
}

/** Batches of 1,000 messages through `commit`. */
async function commitAll(storage: Storage, total: number): Promise<void> {
  for (let i = 0; i < total; i += 1000) {
    const messages = Array.from({ length: Math.min(1000, total - i) }, (_, k) => message(i + k, total));
    await storage.commit(OWNER, { messages });
  }
}

/**
 * The rows `commit` writes, 5,000 per INSERT: `commit` sends one statement per message, which
 * would make a million-message fill take most of the run. Same columns, same `tsvectorText` and
 * `foldedWords`.
 */
async function insertAll(admin: pg.Client, schema: string, total: number): Promise<void> {
  for (let i = 0; i < total; i += 5000) {
    const batch = Array.from({ length: Math.min(5000, total - i) }, (_, k) => message(i + k, total));
    const vectors = batch.map((m) => tsvectorText(m.text, m.chat_id, m.thread_id));
    await admin.query(
      `INSERT INTO "${schema}".messages (owner, message_id, chat_id, thread_key, role, ts, text, data, lanes)
       SELECT $1, m, c, '', r, t, x, d, l::tsvector FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[]) AS u(m, c, r, t, x, d, l)`,
      [
        OWNER,
        ...(["message_id", "chat_id", "role", "ts", "text"] as const).map((f) => batch.map((m) => m[f])),
        batch.map((m) => JSON.stringify(m)),
        vectors.map((v) => v.lanes),
      ],
    );
    await admin.query(
      `INSERT INTO "${schema}".message_search (owner, message_id, ts, words, folded)
       SELECT $1, m, t, w::tsvector, f FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[]) AS u(m, t, w, f)`,
      [
        OWNER,
        batch.map((m) => m.message_id),
        batch.map((m) => m.ts),
        vectors.map((v) => v.words),
        batch.map((m) => foldedWords(m.text)),
      ],
    );
  }
}

/** Messages in a kept schema, 0 when it does not exist yet. */
async function storedMessages(admin: pg.Client, schema: string): Promise<number> {
  if ((await admin.query(`SELECT to_regclass($1) AS r`, [`"${schema}".messages`])).rows[0].r === null) return 0;
  return Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".messages`)).rows[0].n);
}

/** Opens a storage and fills it (timed); on a kept schema of an older version, opening is the migration. */
async function filled(name: string, storage: Storage, total: number, fill: () => Promise<void>): Promise<number> {
  const opened = performance.now();
  await storage.open?.();
  console.error(`search bench: ${name} open ${((performance.now() - opened) / 1000).toFixed(1)} s`);
  const t0 = performance.now();
  await fill();
  return Math.round(total / ((performance.now() - t0) / 1000));
}

/** Runs of one storage per turn: the storages take turns, so a slow spell of the machine falls on both. */
const TURN = 10;

/**
 * Each query on every storage: a warm-up of 10 runs each, then turns of {@link TURN} runs, the
 * storages alternating, until each has run the query `runs` times. Queries per second are
 * one storage's runs over the time they took, one after another.
 */
async function measure(
  storages: Array<{ name: string; storage: Storage; fillPerSecond: number }>,
  total: number,
): Promise<Row[]> {
  const rows: Row[] = storages.map(({ name, fillPerSecond }) => ({
    storage: name,
    messages: total,
    fillPerSecond,
    queries: {},
  }));
  for (const q of QUERIES) {
    const samples = storages.map(() => [] as number[]);
    const hits = await Promise.all(
      storages.map(async ({ storage }) => (await storage.search(OWNER, q.query(0))).length),
    );
    for (const { storage } of storages) for (let k = 0; k < 10; k++) await storage.search(OWNER, q.query(k));
    for (let done = 0; done < q.runs; done += TURN) {
      for (const [i, { storage }] of storages.entries()) {
        for (let k = done; k < Math.min(q.runs, done + TURN); k++) {
          const t = performance.now();
          await storage.search(OWNER, q.query(k));
          samples[i].push(performance.now() - t);
        }
      }
    }
    samples.forEach((taken, i) => {
      const { p50, p99 } = percentiles(taken);
      rows[i].queries[q.name] = {
        p50,
        p99,
        perSecond: Math.round(taken.length / (taken.reduce((a, b) => a + b, 0) / 1000)),
        hits: hits[i],
      };
    });
  }
  return rows;
}

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch (error) {
    console.log(
      `search bench: skipped, PostgreSQL is not reachable (${(error as Error).message}); run .ci/services.sh`,
    );
    return;
  }
  const rows: Row[] = [];
  const load: number[] = [];
  try {
    for (const total of sizes) {
      const schema = keep ? `bench_search_keep_${total}` : `bench_search_${randomBytes(5).toString("hex")}`;
      const dir = mkdtempSync(join(tmpdir(), "cg-bench-search-"));
      const open: Array<{ name: string; storage: Storage; fillPerSecond: number }> = [];
      try {
        const reuse = keep && (await storedMessages(admin, schema)) === total;
        console.error(`search bench: postgres, ${total} messages${reuse ? ", reusing the kept schema" : ""}…`);
        const postgres = postgresStorage({ connectionString: DATABASE_URL, schema });
        // In the list before it is filled, so that a failed fill still closes it.
        open.push({ name: "postgres", storage: postgres, fillPerSecond: NaN });
        const postgresFill = await filled("postgres", postgres, total, async () => {
          if (reuse) return;
          await admin.query(`DELETE FROM "${schema}".messages`);
          await insertAll(admin, schema, total);
          await admin.query(`ANALYZE "${schema}".messages, "${schema}".message_search`);
        });
        if (!reuse) open[0].fillPerSecond = postgresFill;
        if (!postgresOnly) {
          console.error(`search bench: sql.js, ${total} messages…`);
          const writer = sqlJsStorage({ dir });
          let fillPerSecond: number;
          try {
            fillPerSecond = await filled("sql.js", writer, total, () => commitAll(writer, total));
          } finally {
            // Closed and opened again, so that no snapshot of the fill is still being written while
            // the queries run: both storages are measured at rest, as after a restart.
            await writer.close?.();
          }
          const sqljs = sqlJsStorage({ dir });
          await sqljs.open?.();
          open.push({ name: "sql.js", storage: sqljs, fillPerSecond });
        }
        console.error(`search bench: ${total} messages, queries…`);
        rows.push(...(await measure(open, total)));
      } finally {
        for (const { storage } of open) await storage.close?.();
        if (!keep) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        rmSync(dir, { recursive: true, force: true });
      }
      load.push(loadavg()[0]);
    }
  } finally {
    await admin.end();
  }
  console.log(
    `\nNode ${process.version}; load average (1 min) after each size: ${load.map((l) => l.toFixed(1)).join(", ")}\n`,
  );
  console.log("| messages | query | postgres p50 / p99 ms | sql.js p50 / p99 ms | postgres q/s | sql.js q/s | hits |");
  console.log("|---|---|---|---|---|---|---|");
  for (const total of sizes) {
    const [p, s] = ["postgres", "sql.js"].map((name) => rows.find((r) => r.storage === name && r.messages === total));
    for (const q of QUERIES) {
      const a = p!.queries[q.name];
      const b = s?.queries[q.name] ?? { p50: "–", p99: "–", perSecond: "–", hits: a.hits };
      console.log(
        `| ${total.toLocaleString("en")} | ${q.name} | ${a.p50} / ${a.p99} | ${b.p50} / ${b.p99} | ${a.perSecond} | ${b.perSecond} | ${a.hits === b.hits ? a.hits : `${a.hits} vs ${b.hits}`} |`,
      );
    }
    console.log(
      `| ${total.toLocaleString("en")} | fill, messages/s (postgres: direct INSERT of 5,000 rows; sql.js: commit of 1,000) | ${Number.isNaN(p!.fillPerSecond) ? "kept schema" : p!.fillPerSecond} | ${s?.fillPerSecond ?? "–"} | | | |`,
    );
  }
  console.log(`\n\`\`\`json\n${JSON.stringify(rows)}\n\`\`\``);
}

await main();
