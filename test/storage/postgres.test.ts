import { describe } from "vitest";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { describeStorageConformance } from "../conformance/storage.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const available = await postgresAvailable("storage conformance: postgres");

describe.skipIf(!available)("postgres", () => {
  describeStorageConformance("postgres", async () => {
    const schema = `t_${runId()}`;
    return { storage: postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 }), cleanup: () => dropSchema(schema) };
  });
});
