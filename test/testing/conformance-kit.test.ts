// "chat-gateway/testing" as a user runs it: vitest in a child process over test files that import
// only the public entries. The suites pass on the built-in memory adapters (and the demo runtime)
// and fail, at exactly the broken guarantee, on adapters that break one.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";

const root = join(import.meta.dirname, "../..");
const kit = join(root, "test/fixtures/conformance-kit");
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

interface Report {
  testResults: Array<{ name: string; assertionResults: Array<{ title: string; status: string }> }>;
}

/** Runs vitest on the kit folder; resolves with its exit code and JSON report. */
async function runKit(): Promise<{ code: number | null; report: Report }> {
  const dir = await mkdtemp(join(tmpdir(), "cg-kit-"));
  dirs.push(dir);
  const out = join(dir, "report.json");
  const vitest = join(root, "node_modules/vitest/vitest.mjs");
  const args = [vitest, "run", "--config", join(kit, "vitest.config.ts"), "--reporter=json", `--outputFile=${out}`];
  const child = spawn(process.execPath, args, { cwd: kit, stdio: "ignore" });
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  return { code, report: JSON.parse(await readFile(out, "utf8")) };
}

test("conformance kit - passes on the memory adapters, fails on broken ones at the broken guarantee", async () => {
  const { code, report } = await runKit();
  const file = (name: string) => report.testResults.find((r) => r.name.endsWith(name))!.assertionResults;
  const failed = (name: string) =>
    file(name)
      .filter((t) => t.status === "failed")
      .map((t) => t.title)
      .sort();

  const good = file("memory.kit.ts");
  expect(good.length).toBeGreaterThan(90);
  expect(good.filter((t) => t.status !== "passed")).toEqual([]);

  expect(failed("broken.kit.ts")).toEqual(
    [
      // reversed history (storage)
      "history - newest page comes oldest first with has_more",
      "history - pages by id when timestamps tie",
      "history - pages through 1,000 messages, many sharing one ts, with no gap and no repeat",
      // shared owners (media store)
      "owners - one owner can neither read nor delete another's item",
      "owners - the same id under two owners holds two items",
      // reordering (bus)
      "order - frames for one owner reach every subscriber in publish order, once each, intact",
      "processes - frames published on the peer reach this bus's subscribers in order, once each",
      // deaf to abort (runtime)
      "abort - a turn started with an aborted signal ends as soon",
      "abort - the turn ends soon after the signal aborts",
      // codeless (connection: no close codes, no buffer figure)
      "backpressure - bufferedAmount counts a large send still queued, then falls back to 0",
      "close - a device that disconnects frees its place",
      "close - gateway.close() closes devices with 1001; a closed Connection still takes calls",
      "handshake - another first frame gets error auth and close 4401",
      "handshake - no hello in time closes 4408; min_protocol 2 closes 4426",
      "text - a frame over max_frame_bytes closes 1009",
    ].sort(),
  );
  expect(code).toBe(1);
}, 180_000);
