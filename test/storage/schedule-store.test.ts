// The ScheduleStore contract on every built-in storage, each its own schedule store: the kit's suite.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe } from "vitest";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { describeScheduleStoreConformance } from "chat-gateway/testing";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

describeScheduleStoreConformance("memory", () => memoryStorage());

describeScheduleStoreConformance("sql.js", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cg-schedules-"));
  const store = sqlJsStorage({ dir });
  await store.open();
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

const available = await postgresAvailable("schedule store conformance: postgres");
describe.skipIf(!available)("postgres", () => {
  describeScheduleStoreConformance("postgres", async () => {
    const schema = `t_${runId()}`;
    // The peer is a second process's storage on the same schema.
    const [store, peer] = [0, 1].map(() => postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 }));
    await store!.open();
    await peer!.open();
    return {
      store: store!,
      peer: peer!,
      cleanup: async () => {
        await Promise.all([store!.close(), peer!.close()]);
        await dropSchema(schema);
      },
    };
  });
});
