// Many hands at once on the turn queue: devices on two gateways sharing one storage (one gateway for
// sql.js, whose folder one process holds) send into one lane at the same moment, each message also
// retried at once with its client_msg_id. Every acknowledged message is stored once and answered
// exactly once, each device's messages in the order it sent them, on every storage.
import { afterEach, describe, expect, test } from "vitest";
import { memoryBus, memoryLaneLock } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";

const pgUp = await postgresAvailable("turn queue concurrency");

interface Setup {
  storages: Storage[];
  cleanup(): Promise<void>;
}

const kinds: Array<[string, boolean, () => Promise<Setup>]> = [
  [
    "memory",
    true,
    async () => {
      const shared = memoryStorage();
      return { storages: [shared, shared], cleanup: async () => undefined };
    },
  ],
  ["sql.js", true, async () => ({ storages: [sqlJsStorage({ dir: await tempDir() })], cleanup: removeTempDirs })],
  [
    "postgres",
    pgUp,
    async () => {
      const schema = `t_${runId()}`;
      return {
        storages: [
          postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 }),
          postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 }),
        ],
        cleanup: () => dropSchema(schema),
      };
    },
  ],
];

let harnesses: Harness[] = [];
let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  for (const h of harnesses) await h.close();
  harnesses = [];
  await cleanup?.();
  cleanup = undefined;
});

describe.each(kinds)("turn queue - many sends at once on %s", (_name, available, make) => {
  test.skipIf(!available)(
    "turn queue - 8 devices × 5 messages into one lane, each retried at once: stored once, answered once, in each device's order",
    async () => {
      const setup = await make();
      cleanup = setup.cleanup;
      const bus = memoryBus();
      const laneLock = memoryLaneLock();
      const shared = setup.storages.length > 1 ? { bus, laneLock } : {};
      // Each gateway opens its storage; a memory storage shared by two gateways opens once per gateway, harmlessly.
      for (const storage of setup.storages)
        harnesses.push(
          await startGateway({ storage, runtime: demoRuntime({ delayMs: 1 }), maxTurnsPerOwner: 100, ...shared }),
        );
      const devices = await Promise.all(
        Array.from({ length: 8 }, (_, i) => Client.connect(harnesses[i % harnesses.length].url)),
      );
      const sent = await Promise.all(
        devices.map(async (device, d) => {
          const ids: string[] = [];
          for (let i = 0; i < 5; i++) {
            const payload = { chat_id: "default", text: `d${d} m${i}`, client_msg_id: `d${d}-${i}` };
            const [first, retry] = await Promise.all([
              device.request("message.send", payload),
              device.request("message.send", payload),
            ]);
            expect(first.type).toBe("message");
            expect(retry.payload.message_id).toBe(first.payload.message_id);
            ids.push(first.payload.message_id as string);
          }
          return ids;
        }),
      );
      const watcher = devices[0];
      const all = sent.flat();
      // Every message's answer ends.
      for (const id of all)
        await watcher.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === id, 30_000);
      const page = await watcher.request("history", { chat_id: "default", limit: 200 });
      const messages = page.payload.messages as Array<Record<string, any>>;
      const users = messages.filter((m) => m.role === "user");
      const answers = messages.filter((m) => m.role === "assistant");
      expect(users.map((u) => u.message_id).sort()).toEqual([...all].sort());
      expect(answers.map((a) => a.reply_to).sort()).toEqual([...all].sort());
      expect(answers.every((a) => a.status === "complete")).toBe(true);
      const answeredAt = new Map(answers.map((a, i) => [a.reply_to as string, i]));
      for (const ids of sent) {
        const order = ids.map((id) => answeredAt.get(id)!);
        expect(order).toEqual([...order].sort((x, y) => x - y));
      }
      // Nothing is left waiting in the storage.
      expect(await setup.storages[0].waitingTurns()).toEqual([]);
    },
    60_000,
  );
});
