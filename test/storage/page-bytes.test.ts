// The Storage contract's byte bound, for each built-in storage: a history or outbox page of long
// messages ends once it holds LIMITS.storagePageBytes, the newest kept for history, and paging on
// reads everything once; `readOutbox`'s `types` reads only frames of those types.
import { afterAll, describe, expect, test } from "vitest";
import type { StoredMessage } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import { memoryStorage } from "chat-gateway/storage/memory";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { removeTempDirs, tempDir } from "./sqljs-helpers.js";

const pgAvailable = await postgresAvailable("page bytes: postgres");
const schema = `t_${runId()}`;

afterAll(async () => {
  await removeTempDirs();
  if (pgAvailable) await dropSchema(schema);
});

/** Six messages of 0.4 MiB: a page of 1 MiB holds three of them (the third takes it past the bound). */
const COUNT = 6;
const CHARS = 400 * 1024;
const PER_PAGE = Math.ceil(LIMITS.storagePageBytes / CHARS);

function message(i: number): StoredMessage {
  return {
    message_id: `m${i}`,
    role: "user",
    text: `${i} `.padEnd(CHARS, "x"),
    reasoning: "",
    ts: 1_000 + i,
    media: [],
    chat_id: "c1",
    thread_id: null,
  };
}

const storages: Array<[string, () => Promise<Storage>]> = [
  ["memory", async () => memoryStorage()],
  ["sqljs", async () => sqlJsStorage({ dir: await tempDir(), inProcess: true })],
  ...(pgAvailable
    ? [
        ["postgres", async () => postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 2 })] as [
          string,
          () => Promise<Storage>,
        ],
      ]
    : []),
];

describe.each(storages)("%s - pages bounded in bytes", (_name, make) => {
  test("page bytes - history and readOutbox end at LIMITS.storagePageBytes; paging on reads each message once", async () => {
    const storage = await make();
    await storage.open();
    try {
      for (let i = 0; i < COUNT; i++)
        await storage.commit("a", {
          messages: [message(i)],
          outbox: [{ type: "message", payload: { text: message(i).text } }],
        });
      await storage.commit("a", { outbox: [{ type: "picker.resolved", payload: { picker_id: "p1" } }] });

      const seen: string[] = [];
      let before: string | undefined;
      for (;;) {
        const page = (await storage.history("a", {
          chat_id: "c1",
          thread_id: null,
          limit: 200,
          ...(before ? { before } : {}),
        }))!;
        expect(page.messages.length).toBeLessThanOrEqual(PER_PAGE);
        seen.unshift(...page.messages.map((m) => m.message_id));
        if (!page.has_more) break;
        before = page.messages[0]!.message_id;
      }
      expect(seen).toEqual(Array.from({ length: COUNT }, (_, i) => `m${i}`));
      const newest = (await storage.history("a", { chat_id: "c1", thread_id: null, limit: 200 }))!;
      expect(newest).toMatchObject({ has_more: true });
      expect(newest.messages.map((m) => m.message_id)).toEqual(["m3", "m4", "m5"]);

      const first = await storage.readOutbox("a", 0, 500);
      expect(first.map((e) => e.seq)).toEqual([1, 2, 3]);
      const rest = await storage.readOutbox("a", 3, 500);
      expect(rest.map((e) => e.seq)).toEqual([4, 5, 6]);
      expect((await storage.readOutbox("a", 6, 500)).map((e) => e.type)).toEqual(["picker.resolved"]);

      expect((await storage.readOutbox("a", 0, 500, ["picker.resolved"])).map((e) => [e.seq, e.payload])).toEqual([
        [7, { picker_id: "p1" }],
      ]);
      expect(await storage.readOutbox("a", 7, 500, ["picker.resolved"])).toEqual([]);
    } finally {
      await storage.close();
    }
  }, 120_000);
});
