// The `duePushes` capability (docs/PROTOCOL.md §21.6) on every built-in storage: the kit's suite.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe } from "vitest";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { describeDuePushConformance } from "chat-gateway/testing";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

describeDuePushConformance("memory", () => ({ storage: memoryStorage() }));

describeDuePushConformance("sql.js", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cg-duepush-"));
  return {
    storage: sqlJsStorage({ dir }),
    reopen: () => sqlJsStorage({ dir }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

const available = await postgresAvailable("due pushes conformance: postgres");
describe.skipIf(!available)("postgres", () => {
  describeDuePushConformance("postgres", async () => {
    const schema = `t_${runId()}`;
    const instance = () => postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 });
    return { storage: instance(), peer: instance(), reopen: instance, cleanup: () => dropSchema(schema) };
  });
});
