// Real gateway processes (the example server) sharing one PostgreSQL schema and one Redis prefix,
// each on its own port, as a load balancer would see them.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import type { TestContext } from "vitest";
import { DATABASE_URL, REDIS_URL, dropKeys, dropSchema, runId } from "../fixtures/services.js";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

const root = join(import.meta.dirname, "..", "..");

export interface GatewayProcess {
  name: string;
  base: string;
  ws: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL: no shutdown at all, as in a crash. */
  kill(): Promise<void>;
}

export interface Cluster {
  schema: string;
  prefix: string;
  dataDir: string;
  redis: Redis;
  start(name: string, env?: Record<string, string>): Promise<GatewayProcess>;
  addUser(name: string, password: string): void;
  /** A query on the cluster's schema. */
  query(text: string, values?: unknown[]): Promise<unknown[]>;
  /** Stop every process still running, drop the schema, the keys and the data dir. */
  destroy(): Promise<void>;
}

/**
 * A cluster for the test of `context`, destroyed when that test ends. Tests that each start their
 * own cluster can then run at once (describe.concurrent): each has its schema, prefix and data
 * folder, and the context's hook knows which test it belongs to, where a global afterEach would not.
 */
export function clusterFor(context: Pick<TestContext, "onTestFinished">): Cluster {
  const cluster = createCluster();
  context.onTestFinished(() => cluster.destroy());
  return cluster;
}

export function createCluster(): Cluster {
  const id = runId();
  const schema = `t_${id}`;
  const prefix = `t:${id}:`;
  const dataDir = mkdtempSync(join(tmpdir(), "cg-multi-"));
  const redis = new Redis(REDIS_URL);
  const running = new Set<GatewayProcess>();
  const env = {
    GATEWAY_DATA_DIR: dataDir,
    DATABASE_URL,
    DATABASE_SCHEMA: schema,
    REDIS_URL,
    REDIS_PREFIX: prefix,
    GATEWAY_LANE_TTL_MS: "1500",
  };

  return {
    schema,
    prefix,
    dataDir,
    redis,
    start(name, extra = {}) {
      const child = spawn(...exampleServerCommand([]), {
        cwd: root,
        env: { ...process.env, PORT: "0", ...env, ...extra },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout!.on("data", (d) => (out += d));
      child.stderr!.on("data", (d) => (out += d));
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      return new Promise((resolve, reject) => {
        // Generous: a loaded machine takes tens of seconds to compile and start the server.
        const timer = setTimeout(() => reject(new Error(`${name}: no start line within 90 s: ${out}`)), 90_000);
        child.stdout!.on("data", () => {
          const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (!m) return;
          clearTimeout(timer);
          const proc: GatewayProcess = {
            name,
            base: m[1],
            ws: `${m[1].replace("http", "ws")}/ws/gateway`,
            child,
            output: () => out,
            async stop() {
              running.delete(proc);
              if (child.exitCode === null) child.kill("SIGTERM");
              await exited;
            },
            async kill() {
              running.delete(proc);
              if (child.exitCode === null) child.kill("SIGKILL");
              await exited;
            },
          };
          running.add(proc);
          resolve(proc);
        });
        child.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`${name} exited ${code}: ${out}`));
        });
      });
    },
    addUser(name, password) {
      const r = spawnSync(...exampleServerCommand(["user", "add", name]), {
        cwd: root,
        env: { ...process.env, GATEWAY_DATA_DIR: dataDir },
        input: `${password}\n`,
        encoding: "utf8",
      });
      if (r.status !== 0) throw new Error(`user add failed: ${r.stderr}`);
    },
    async query(text, values = []) {
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        await client.query(`SET search_path TO "${schema}"`);
        return (await client.query(text, values)).rows;
      } finally {
        await client.end();
      }
    },
    async destroy() {
      await Promise.all([...running].map((p) => p.kill()));
      await dropSchema(schema).catch(() => undefined);
      await dropKeys(redis, prefix).catch(() => undefined);
      redis.disconnect();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
