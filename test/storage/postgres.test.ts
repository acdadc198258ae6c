import { describe, expect, test } from "vitest";
import { postgresStorage, type PostgresStorageOptions } from "chat-gateway/storage/postgres";
import { describeStorageConformance } from "chat-gateway/testing";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const available = await postgresAvailable("storage conformance: postgres");

describe.skipIf(!available)("postgres", () => {
  describeStorageConformance(
    "postgres",
    async () => {
      const schema = `t_${runId()}`;
      const instance = () => postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 });
      // The peer is a second process's storage on the same schema.
      return { storage: instance(), peer: instance(), reopen: instance, cleanup: () => dropSchema(schema) };
    },
    { persists: true },
  );
});

describe.skipIf(!available)("postgres storage - beyond the conformance suite", () => {
  test("postgres - misconfiguration is a TypeError at construction", () => {
    expect(() => postgresStorage({} as PostgresStorageOptions)).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, schema: "bad-name" })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, poolSize: 0 })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, pool: {} as never })).toThrow(TypeError);
    expect(() => postgresStorage({ connectionString: DATABASE_URL, preparedStatements: "yes" as never })).toThrow(
      TypeError,
    );
  });
});
