// The built sql.js storage, as an installed package would run it: ESM and CommonJS each write,
// close (which writes a snapshot through the worker thread shipped in dist/) and read back.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as esm from "chat-gateway/storage/sqljs";

const cjs = createRequire(import.meta.url)("chat-gateway/storage/sqljs");
for (const [name, { sqlJsStorage }] of [
  ["esm", esm],
  ["cjs", cjs],
]) {
  const dir = mkdtempSync(join(tmpdir(), `cg-smoke-${name}-`));
  try {
    const message = {
      message_id: "m1",
      role: "user",
      text: "smoke test",
      reasoning: "",
      ts: 1,
      media: [],
      chat_id: "c",
      thread_id: null,
    };
    let storage = sqlJsStorage({ dir });
    await storage.open();
    await storage.commit("o", { messages: [message] });
    await storage.close();
    if (!readdirSync(dir).some((f) => /^snapshot-\d+\.db$/.test(f)))
      throw new Error(`${name}: close wrote no snapshot`);
    storage = sqlJsStorage({ dir });
    await storage.open();
    const hits = await storage.search("o", { query: "smoke", scope: "all", limit: 5 });
    await storage.close();
    if (hits.length !== 1) throw new Error(`${name}: expected the message back, got ${JSON.stringify(hits)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
console.log("sql.js storage from the build: ok (esm, cjs)");
