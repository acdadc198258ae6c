// The example server's DATABASE_URL / REDIS_URL wiring, without spawning processes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { parseConfig, UsageError } from "../../examples/server/config.js";
import { startServer } from "../../examples/server/server.js";
import { Client } from "../gateway/harness.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const pgUp = await postgresAvailable("example server on PostgreSQL alone");

describe("example server - multi-process settings", () => {
  test("config - DATABASE_URL, DATABASE_SCHEMA, REDIS_URL, REDIS_PREFIX and GATEWAY_LANE_TTL_MS are read; flags win", () => {
    const config = parseConfig(["--redis-prefix", "flag:"], {
      DATABASE_URL: "postgres://db/x",
      DATABASE_SCHEMA: "gw",
      REDIS_URL: "redis://r:6379",
      REDIS_PREFIX: "env:",
      GATEWAY_LANE_TTL_MS: "5000",
    });
    expect(config).toMatchObject({
      databaseUrl: "postgres://db/x",
      databaseSchema: "gw",
      redisUrl: "redis://r:6379",
      redisPrefix: "flag:",
      laneTtlMs: 5000,
    });
    expect(parseConfig([], {}).laneTtlMs).toBeUndefined();
    expect(() => parseConfig(["--lane-ttl-ms", "10"], {})).toThrow(UsageError);
  });

  test("server - REDIS_URL without DATABASE_URL is refused with a TypeError", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "cg-cfg-"));
    try {
      await expect(
        startServer(
          {
            port: 0,
            host: "127.0.0.1",
            dataDir,
            usersFile: join(dataDir, "users.json"),
            service: "gateway",
            memory: false,
            redisUrl: "redis://127.0.0.1:6379",
          },
          () => undefined,
        ),
      ).rejects.toThrow(TypeError);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test.skipIf(!pgUp)(
    "server - DATABASE_URL alone runs one process on PostgreSQL, and its data outlives a restart",
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "cg-cfg-"));
      const schema = `t_${runId()}`;
      const lines: string[] = [];
      const config = {
        port: 0,
        host: "127.0.0.1",
        dataDir,
        usersFile: join(dataDir, "users.json"),
        service: "gateway",
        memory: false,
        databaseUrl: DATABASE_URL,
        databaseSchema: schema,
      };
      try {
        const first = await startServer(config, (line) => lines.push(line));
        expect(lines[0]).toContain(`storage postgres (schema ${schema}), login off`);
        const url = `${first.url.replace("http", "ws")}/ws/gateway`;
        const c = await Client.connect(url);
        const { final } = await c.say({ chat_id: "default", text: "kept in postgres" });
        await first.close();
        const second = await startServer(config, () => undefined);
        const again = await Client.connect(`${second.url.replace("http", "ws")}/ws/gateway`);
        const history = await again.request("history", { chat_id: "default" });
        expect((history.payload.messages as Array<{ message_id: string }>).map((m) => m.message_id)).toContain(
          final.payload.message_id,
        );
        await again.close();
        await second.close();
      } finally {
        await dropSchema(schema);
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});
