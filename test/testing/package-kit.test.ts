// The conformance kit as a user gets it: the packed package installed into an empty project,
// run by that project's vitest over a five-line test file. It passes on memoryStorage() and fails
// on a storage that breaks the contract. Uses dist/ when it is newer than the sources, else builds.
import { readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { npm, packedTarball, root, run } from "../fixtures/packed-project.js";

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const MEMORY = `import { describeStorageConformance } from "chat-gateway/testing";
import { memoryStorage } from "chat-gateway/storage/memory";
describeStorageConformance("memory", () => memoryStorage());
`;

const BROKEN = `import { describeStorageConformance } from "chat-gateway/testing";
import { memoryStorage } from "chat-gateway/storage/memory";
// Stores frames but never reads them back.
describeStorageConformance("forgetful outbox", () => ({ ...memoryStorage(), readOutbox: async () => [] }));
`;

interface Report {
  testResults: Array<{ name: string; assertionResults: Array<{ title: string; status: string }> }>;
}

test("package - the packed kit passes on memoryStorage() and fails on a broken storage, in a project of its own", async () => {
  const { project, tarball } = await packedTarball("cg-package-");
  dirs.push(project);
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "kit-user", private: true, type: "module" }));
  // The package's dependencies come from the npm cache, or the registry when not cached.
  await run(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], {
    cwd: project,
  });
  // The user's vitest: the one this repository tests with.
  await symlink(join(root, "node_modules/vitest"), join(project, "node_modules/vitest"), "dir");
  await writeFile(join(project, "memory.test.ts"), MEMORY);
  await writeFile(join(project, "broken.test.ts"), BROKEN);

  const vitest = join(project, "node_modules/vitest/vitest.mjs");
  const outcome = await run(process.execPath, [vitest, "run", "--reporter=json", "--outputFile=report.json"], {
    cwd: project,
  }).then(
    () => 0,
    (error: { code?: number }) => error.code,
  );
  const report = JSON.parse(await readFile(join(project, "report.json"), "utf8")) as Report;
  const results = (file: string) => report.testResults.find((r) => r.name.endsWith(file))!.assertionResults;

  expect(results("memory.test.ts").length).toBeGreaterThan(40);
  expect(results("memory.test.ts").filter((t) => t.status !== "passed")).toEqual([]);
  const failed = results("broken.test.ts")
    .filter((t) => t.status === "failed")
    .map((t) => t.title);
  expect(failed).toContain("outbox - readOutbox returns frames after the cursor in seq order, at most limit");
  expect(failed).toContain("copies - mutating what was passed in or returned leaves stored state alone");
  expect(failed).not.toContain("history - pages by id when timestamps tie");
  expect(outcome).toBe(1);
}, 300_000);
