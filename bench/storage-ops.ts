/**
 * Storage operations per second for bench/multiprocess.ts, the same on every storage, one after
 * another: commits of a message with one outbox frame (alone and 8 at once), getMessage, history
 * pages, searches and readOutbox pages.
 * @module
 */
import type { StoredMessage } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";

export interface StorageResult {
  storage: string;
  opsPerSecond: Record<string, number>;
}

export async function storageOps(name: string, storage: Storage, n: number): Promise<StorageResult> {
  await storage.open?.();
  const owner = "bench";
  const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
  const msg = (i: number): StoredMessage => ({
    message_id: `m${String(i).padStart(7, "0")}`,
    role: i % 2 ? "assistant" : "user",
    text: `message ${i} about ${words[i % 10]} and ${words[(i * 7) % 10]} with some more ordinary words in it`,
    reasoning: "",
    ts: 1_700_000_000_000 + i,
    media: [],
    chat_id: "c1",
    thread_id: null,
  });
  const ops: Record<string, number> = {};
  const time = async (op: string, count: number, fn: (i: number) => Promise<unknown>) => {
    const t0 = performance.now();
    for (let i = 0; i < count; i++) await fn(i);
    ops[op] = count / ((performance.now() - t0) / 1000);
  };
  await time("commit (message + outbox frame)", n, (i) =>
    storage.commit(owner, { messages: [msg(i)], outbox: [{ type: "message", payload: { i } }] }),
  );
  await time("commit, 8 concurrent", n, async (i) => {
    if (i % 8) return;
    await Promise.all(
      Array.from({ length: 8 }, (_, k) =>
        storage.commit(owner, { messages: [msg(n + i + k)], outbox: [{ type: "message", payload: { i } }] }),
      ),
    );
  });
  await time("getMessage", n, (i) => storage.getMessage(owner, msg(i).message_id));
  await time("history page of 50", n / 4, (i) =>
    storage.history(owner, { chat_id: "c1", thread_id: null, limit: 50, before: msg(n - 1 - i).message_id }),
  );
  await time("search (2 words)", n / 8, (i) =>
    storage.search(owner, { query: `${words[i % 10]} ${words[(i + 3) % 10]}`, scope: "all", limit: 20 }),
  );
  await time("readOutbox page of 100", n / 4, (i) => storage.readOutbox(owner, i * 4, 100));
  await storage.close?.();
  return { storage: name, opsPerSecond: ops };
}
