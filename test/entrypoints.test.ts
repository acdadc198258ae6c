// One list of entry points: package.json exports, the build and the reference docs follow it.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { entrypoints } from "../entrypoints.mjs";
import { exportsFor } from "../scripts/sync-entrypoints.mjs";

const root = join(import.meta.dirname, "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const typedoc = JSON.parse(readFileSync(join(root, "typedoc.json"), "utf8"));

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

describe("entry points", () => {
  it("entry points - package.json exports follow entrypoints.mjs", () => {
    const { "./package.json": _self, ...exports } = pkg.exports;
    expect(exports).toEqual(exportsFor(entrypoints));
  });

  it("entry points - typedoc documents every entry point", () => {
    expect(typedoc.entryPoints).toEqual(entrypoints.map((e) => e.source));
  });

  it("entry points - every adapter entry file is listed and every listed source exists", () => {
    for (const e of entrypoints) expect(existsSync(join(root, e.source)), e.source).toBe(true);
    const adapterEntries = walk(join(root, "adapters"))
      .filter((p) => p.endsWith("/index.ts"))
      .map((p) => p.slice(root.length + 1));
    for (const file of adapterEntries) expect(entrypoints.map((e) => e.source)).toContain(file);
  });

  it("entry points - adapters import the core only through its public entry", () => {
    for (const file of walk(join(root, "adapters")).filter((p) => /\.(ts|mts|mjs)$/.test(p))) {
      const text = readFileSync(file, "utf8");
      expect(text, file).not.toMatch(/from\s+["'](\.\.\/)+src\//);
    }
  });

  it("entry points - the bin in an unbuilt clone says to run npm run build, without a stack trace", () => {
    const clone = mkdtempSync(join(tmpdir(), "cg-bin-"));
    try {
      mkdirSync(join(clone, "bin"));
      copyFileSync(join(root, "bin/chat-gateway.mjs"), join(clone, "bin/chat-gateway.mjs"));
      const run = spawnSync(process.execPath, [join(clone, "bin/chat-gateway.mjs"), "--help"], { encoding: "utf8" });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain("npm run build");
      expect(run.stderr).not.toMatch(/\n\s+at /);
    } finally {
      rmSync(clone, { recursive: true, force: true });
    }
  });
});
