/**
 * Builds a sql.js data folder of generated history once, for the benches that need a large store
 * (bench/storage-sqljs-wire.ts): filling a million messages takes minutes on a small machine, so
 * it is done once and the folder copied for each run.
 *
 *   node --import tsx bench/sqljs-corpus-1m.ts <dir> [messages=1000000] [owner=~anonymous]
 *
 * The messages are those of bench/corpus.ts (50 chats, 300 characters, the common word in one of
 * five, the rare one in ten), committed in batches of 1,000 and closed with a snapshot.
 * @module
 */
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { message } from "./corpus.js";

const [dir, totalArg = "1000000", owner = "~anonymous"] = process.argv.slice(2);
if (!dir) throw new Error("usage: bench/sqljs-corpus-1m.ts <dir> [messages] [owner]");
const total = Number(totalArg);
// On this thread: nothing else runs meanwhile, and it saves copying every batch to another process.
const storage = sqlJsStorage({ dir, inProcess: true, onWarning: (m) => console.error(m) });
await storage.open();
const started = performance.now();
for (let i = 0; i < total; i += 1000) {
  const messages = Array.from({ length: Math.min(1000, total - i) }, (_, k) => message(i + k, total));
  await storage.commit(owner, { messages, outbox: [{ type: "message", payload: { upto: i } }] });
  if (i % 100_000 === 0) console.error(`${i} messages, ${Math.round((performance.now() - started) / 1000)} s`);
}
await storage.close();
console.error(`${total} messages in ${Math.round((performance.now() - started) / 1000)} s`);
