// What the README and the shipped docs link to is in the package, so a link read from
// node_modules/chat-gateway (or on npm) leads somewhere: `npm pack --dry-run` lists the tarball.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

it("package - every relative link in the shipped Markdown points into the tarball", () => {
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const [pack] = JSON.parse(
    execFileSync(npm, ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: root, encoding: "utf8" }),
  );
  const shipped = new Set<string>(pack.files.map((f: { path: string }) => f.path));
  const markdown = [...shipped].filter((f) => f.endsWith(".md"));
  expect(markdown).toEqual(
    expect.arrayContaining(["README.md", "docs/PROTOCOL.md", "bench/RESULTS.md", "examples/server/README.md"]),
  );
  // Pages for contributors stay in the repository: the bench notebook (the results page ships)
  // and the PostgreSQL search internals (docs/MULTIPROCESS.md keeps what an operator needs).
  expect(markdown).not.toContain("bench/NOTES.md");
  expect(markdown).not.toContain("adapters/storage/postgres/SEARCH.md");
  for (const file of markdown) {
    const text = readFileSync(join(root, file), "utf8");
    for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const path = normalize(join(dirname(file), target!));
      expect(shipped.has(path) || [...shipped].some((f) => f.startsWith(`${path}/`)), `${file} links ${target}`).toBe(
        true,
      );
    }
  }
});
