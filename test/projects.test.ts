// The projects' lists (test/projects.ts) against what the files do, read from their text: a file
// that asks whether PostgreSQL or Redis answers belongs to INTEGRATION (in the unit project the
// guard refuses the connection, which reads as "not reachable", and the file would skip in
// silence), and a file that replaces a module belongs to MOCKING (the unit project's files share
// their worker's modules).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { INTEGRATION, MOCKING } from "./projects.js";

const root = fileURLToPath(new URL("..", import.meta.url));

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith(".test.ts") ? [relative(root, path)] : [];
  });
}

/** The lists hold paths and `*` within one name, nothing more. */
function matches(list: readonly string[], file: string): boolean {
  return list.some((glob) => new RegExp(`^${glob.split("*").map(escapeRegExp).join("[^/]*")}$`).test(file));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

const files = testFiles(join(root, "test")).filter((file) => !file.startsWith("test/browser/"));
const text = (file: string) => readFileSync(join(root, file), "utf8");

describe("test projects", () => {
  it("a file that needs PostgreSQL or Redis is listed in INTEGRATION", () => {
    const needing = files.filter((file) => /\b(postgresAvailable|redisAvailable|everyStorage)\(/.test(text(file)));
    expect(needing.length).toBeGreaterThan(10);
    expect(needing.filter((file) => !matches(INTEGRATION, file))).toEqual([]);
  });

  it("a file that replaces a module is listed in MOCKING", () => {
    const mocking = files.filter((file) => /\bvi\.(mock|doMock)\(/.test(text(file)));
    expect(mocking.length).toBeGreaterThan(0);
    expect(mocking.filter((file) => !matches(MOCKING, file))).toEqual([]);
  });
});
