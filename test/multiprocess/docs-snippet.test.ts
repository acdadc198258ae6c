// docs/MULTIPROCESS.md's process runs as written on PostgreSQL and Redis: a signed-in device gets
// its answer, and SIGTERM lets go of everything (the login protection included), so the process
// ends by itself. Only the environment is the test's: a schema, a Redis database and a port.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createGatewayClient } from "chat-gateway/client";
import { blocks } from "../fixtures/readme-blocks.js";
import { freePort, root, startUntil, type Started } from "../fixtures/packed-project.js";
import {
  DATABASE_URL,
  REDIS_URL,
  dropKeys,
  dropSchema,
  postgresAvailable,
  redisAvailable,
  runId,
} from "../fixtures/services.js";
import { HASHES, login, writeUsers } from "../http/helpers.js";

const available =
  (await postgresAvailable("docs/MULTIPROCESS.md's process")) &&
  (await redisAvailable("docs/MULTIPROCESS.md's process"));

/** A Redis database of its own, so the snippet's keys (default prefix) meet no other test's. */
const redisUrl = Object.assign(new URL(REDIS_URL), { pathname: "/9" }).href;
const schema = `t_${runId()}`;
let dir: string | undefined;
let started: Started | undefined;

afterAll(async () => {
  started?.child.kill("SIGKILL");
  if (!available) return;
  await dropSchema(schema);
  const redis = new Redis(redisUrl);
  await dropKeys(redis, "chat-gateway:");
  redis.disconnect();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Resolves with the exit code, or "running" when the process is still there after `ms`. */
function exitWithin(child: Started["child"], ms: number): Promise<number | null | "running"> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve("running"), ms);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

describe.skipIf(!available)("docs/MULTIPROCESS.md", () => {
  it("docs - the multi-process snippet serves a signed-in device, and on SIGTERM closes everything and exits", async () => {
    const doc = await readFile(join(root, "docs/MULTIPROCESS.md"), "utf8");
    const [snippet] = blocks(doc, "# Running several gateway processes", "ts");
    // Inside the repository, so `ioredis` and `pg` resolve and tsx maps `chat-gateway/*` to the source.
    await mkdir(join(root, "test-results"), { recursive: true });
    dir = await mkdtemp(join(root, "test-results", "multiprocess-doc-"));
    await mkdir(join(dir, "data"), { mode: 0o700 });
    await writeUsers(join(dir, "data/users.json"), { alice: HASHES["alice-password"] });
    await writeFile(join(dir, "server.mts"), snippet!);
    const port = await freePort();
    const env = { REDIS_URL: redisUrl, DATABASE_URL, DATABASE_SCHEMA: schema, PORT: String(port) };
    // Through tsx, as the doc tells a user to run it, not from the tests' build
    // (test/fixtures/example-server-bundle.ts): the snippet is the thing under test.
    started = await startUntil(process.execPath, ["--import", "tsx", "server.mts"], dir, /listening on ws:/, env);

    const { token } = (await login(`http://127.0.0.1:${port}`, "alice", "alice-password")).body as { token: string };
    const client = createGatewayClient({
      url: `ws://127.0.0.1:${port}/ws/gateway`,
      headers: { Authorization: `Bearer ${token}` },
      reconnect: false,
    });
    expect((await client.connect()).user).toBe("alice");
    const answered = new Promise<string>((resolve) => client.on("message.stop", (p) => resolve(p.final_text)));
    await client.sendMessage({ chat_id: "default", text: "hello from the docs" });
    expect(await answered).toBe("You said: hello from the docs");
    client.close();

    started.child.kill("SIGTERM");
    expect(await exitWithin(started.child, 20_000), started.output()).toBe(0);
  }, 90_000);
});
