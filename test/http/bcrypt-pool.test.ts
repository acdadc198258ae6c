// The password verifier's thread pool (node:worker_threads, no package): checks run in arrival
// order on a fixed number of threads, a thread that dies fails only its own check, and closing
// rejects what is still running or waiting.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BcryptPool } from "../../adapters/http/bcrypt-pool.js";

// A stand-in worker with the real one's message shape: "die" ends the thread, "hold" never
// answers, anything else matches when password equals hash.
const dir = mkdtempSync(join(tmpdir(), "cg-pool-"));
const WORKER = join(dir, "worker.mjs");
writeFileSync(
  WORKER,
  `import { parentPort } from "node:worker_threads";
parentPort.on("message", ({ password, hash }) => {
  if (password === "die") process.exit(3);
  if (password === "hold") return;
  if (password === "throw") return parentPort.postMessage({ error: "bad hash" });
  parentPort.postMessage({ matched: password === hash });
});
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("bcrypt pool", () => {
  it("answers each check, more checks than threads included", async () => {
    const pool = new BcryptPool(WORKER, 2);
    const answers = await Promise.all(
      ["a", "b", "c", "d", "e"].map((p, i) => pool.run({ password: p, hash: i % 2 ? p : "x" })),
    );
    expect(answers).toEqual([false, true, false, true, false]);
    await pool.destroy();
  });

  it("a thread that dies fails its own check only, and the next check gets a new thread", async () => {
    const pool = new BcryptPool(WORKER, 1);
    const died = pool.run({ password: "die", hash: "" });
    const after = pool.run({ password: "ok", hash: "ok" });
    await expect(died).rejects.toThrow("bcrypt worker exited with code 3");
    await expect(after).resolves.toBe(true);
    await expect(pool.run({ password: "throw", hash: "" })).rejects.toThrow("bcrypt worker: bad hash");
    await expect(pool.run({ password: "ok", hash: "ok" })).resolves.toBe(true);
    await pool.destroy();
  });

  it("destroy rejects the check running and the ones waiting", async () => {
    const pool = new BcryptPool(WORKER, 1);
    const running = pool.run({ password: "hold", hash: "" });
    const waiting = pool.run({ password: "ok", hash: "ok" });
    const closed = pool.destroy();
    await expect(running).rejects.toThrow("password verifier closed");
    await expect(waiting).rejects.toThrow("password verifier closed");
    await closed;
  });
});
