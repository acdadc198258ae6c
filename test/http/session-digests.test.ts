// The default session store keeps digests only: a heap snapshot of a real process holding a live
// session contains no string that is its token.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "./helpers.js";

const SCRIPT = `
import { writeHeapSnapshot } from "node:v8";
import { createSessionToken, memorySessionStore, sessionId } from "./adapters/http/sessions.ts";
const store = memorySessionStore();
// The token lives only inside this function; what leaves it is the session's id (its digest).
async function signIn() {
  const token = createSessionToken();
  await store.create({ token, username: "alice", expires_at: 4e9 }, 0);
  const found = await store.get(token, 1);
  if (found?.username !== "alice") throw new Error("the session is not found by its token");
  return sessionId(token);
}
const id = await signIn();
writeHeapSnapshot(process.argv[1]);
process.stdout.write(id);
`;

function run(snapshot: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const root = path.resolve(import.meta.dirname, "../..");
    // Through tsx, on purpose: an `-e` script is no file the tests' build
    // (test/fixtures/example-server-bundle.ts) could hold, and it imports a TypeScript source.
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", SCRIPT, snapshot], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
  });
}

let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await cleanup?.();
  cleanup = undefined;
});

describe("memorySessionStore", () => {
  it("session store - keeps no token in clear: a heap snapshot holds no string whose SHA-256 is the session's id", async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    const file = path.join(temp.dir, "heap.heapsnapshot");
    const id = await run(file);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    const { strings } = JSON.parse(await readFile(file, "utf8")) as { strings: string[] };
    const tokens = strings.filter((s) => s.length === 43 && /^[A-Za-z0-9_-]+$/.test(s));
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens.filter((s) => createHash("sha256").update(s).digest("hex") === id)).toEqual([]);
  }, 60_000);
});
