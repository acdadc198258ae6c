// The login protection reports through the one `logger` option: store problems as warnings,
// unexpected failures as errors; the deprecated `log` still receives them.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLoginProtection } from "chat-gateway/login";
import { redisSessionStore } from "chat-gateway/redis";
import { recordingLogger } from "../fixtures/recording-logger.js";
import { HASHES, bearer, request, startServer, tempDir, writeUsers, type TestServer } from "./helpers.js";

let dir: string;
let cleanup: () => Promise<void>;
let file: string;
let srv: TestServer | undefined;
let redis: Redis | undefined;

beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
});
afterEach(async () => {
  await srv?.close();
  srv = undefined;
  redis?.disconnect();
  redis = undefined;
  await cleanup();
});

/** A session store whose Redis is unreachable (nothing listens on port 1): every command fails at once. */
function unreachableSessions() {
  redis = new Redis("redis://127.0.0.1:1", {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on("error", () => undefined);
  return redisSessionStore(redis, { prefix: "t:logger:" });
}

describe("http - logger", () => {
  it("a malformed user store is a warning on the given logger", async () => {
    await writeFile(file, "{not json");
    const logger = recordingLogger();
    srv = await startServer({ usersFile: file, logger });
    expect((await request(srv.url, { path: "/api/x" })).status).toBe(200);
    expect(logger.lines.warn.join("\n")).toMatch(/treated as no users/);
    expect(logger.lines.error).toEqual([]);
  });

  it("an unexpected failure is answered 500 and reported as an error on the given logger", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    const logger = recordingLogger();
    srv = await startServer({ usersFile: file, logger, sessions: unreachableSessions() });
    const reply = await request(srv.url, { path: "/api/chats", headers: bearer("a".repeat(43)) });
    expect(reply).toMatchObject({ status: 500, body: { error: "internal error" } });
    expect(logger.lines.error).toEqual([
      expect.stringMatching(/^login protection failed on GET \/api\/chats: .*(writeable|closed|ECONNREFUSED)/s),
    ]);
  });

  it("the deprecated log still receives an unexpected failure", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    const lines: string[] = [];
    srv = await startServer({ usersFile: file, log: (m) => lines.push(m), sessions: unreachableSessions() });
    expect((await request(srv.url, { path: "/api/chats", headers: bearer("a".repeat(43)) })).status).toBe(500);
    expect(lines).toEqual([expect.stringMatching(/^login protection failed on GET \/api\/chats/)]);
  });

  it.each([
    ["a function", () => undefined],
    ["null", null],
    ["an object without error", { info() {}, warn() {} }],
  ])("a logger that is %s is a TypeError at construction", (_, logger) => {
    expect(() => createLoginProtection({ usersFile: file, logger: logger as never })).toThrow(TypeError);
    expect(() => createLoginProtection({ usersFile: file, logger: logger as never })).toThrow(
      /createLoginProtection: logger must be an object with info, warn and error methods/,
    );
  });

  it("a deprecated log that is not a function is a TypeError at construction", () => {
    expect(() => createLoginProtection({ usersFile: file, log: "console" as never })).toThrow(
      /createLoginProtection: log must be a function/,
    );
  });
});
