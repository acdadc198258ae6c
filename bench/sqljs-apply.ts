/**
 * What one write costs inside sql.js at a million messages, by SQLite's settings for the in-memory
 * file: its rollback journal as a file beside it and `synchronous = FULL` (SQLite's defaults, the
 * storage's before `tuneInMemory`) against the journal in memory and `synchronous = OFF` (the
 * storage's now). The storage's own journal is what makes writes durable; neither setting is.
 *
 *   node --import tsx bench/sqljs-corpus-1m.ts /tmp/cg-corpus     # once: a million messages
 *   node --import tsx bench/sqljs-apply.ts /tmp/cg-corpus [writes=2000]
 *
 * Loads the corpus read-only (nothing on disk changes), then applies single-message commits, each
 * in its own transaction as the engine does, alternating the settings three times. ms per write.
 * @module
 */
import { loadavg } from "node:os";
import initSqlJs from "sql.js";
import { applyOp, type JournalOp } from "../adapters/storage/sqljs/apply.js";
import { loadFolder } from "../adapters/storage/sqljs/load.js";

const [dir, writesArg = "2000"] = process.argv.slice(2);
if (!dir) throw new Error("usage: bench/sqljs-apply.ts <corpus dir> [writes]");
const writes = Number(writesArg);
// A generation past any on disk: loadFolder then reads the folder and changes nothing in it.
const { sql, db } = await loadFolder(dir, await initSqlJs(), () => undefined, Number.MAX_SAFE_INTEGER);
let n = 0;

function commitOp(): JournalOp {
  const i = n++;
  const text = `${"lorem ipsum dolor sit amet ".repeat(11)}${i}`;
  const m = {
    message_id: `apply${i}`,
    role: "user" as const,
    text,
    reasoning: "",
    ts: Date.now(),
    media: [],
    chat_id: "c1",
    thread_id: null,
  };
  return {
    k: "commit",
    o: "bench",
    t: Date.now(),
    c: { messages: [m], outbox: [{ type: "message", payload: { id: m.message_id } }] },
  };
}

function msPerWrite(settings: string): number {
  db.exec(settings);
  const started = performance.now();
  for (let i = 0; i < writes; i++) sql.transaction(() => applyOp(sql, commitOp()));
  return +((performance.now() - started) / writes).toFixed(3);
}

const DEFAULTS = "PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL";
const TUNED = "PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF";
console.log(JSON.stringify({ loadAverageBefore: loadavg().map((l) => +l.toFixed(2)), writes }));
msPerWrite(DEFAULTS); // warm-up
for (let round = 0; round < 3; round++)
  console.log(JSON.stringify({ round, sqliteDefaults: msPerWrite(DEFAULTS), inMemorySettings: msPerWrite(TUNED) }));
