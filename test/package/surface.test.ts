// The public surface is a reviewed diff: every entry's exported names are committed in
// test/package/surface.txt, and a change to any of them fails here until that file changes with it
// (`node scripts/api-surface.mjs --write`). Each name has one home: a type or value is exported by
// one entry only, the one whose reader needs it (README.md, "What is in the box").
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { apiSurface, surfaceFile } from "../../scripts/api-surface.mjs";

describe("public surface", () => {
  const surface = apiSurface();

  it("surface - every entry's exported names are the committed ones", () => {
    expect(surface).toBe(readFileSync(surfaceFile, "utf8"));
  });

  it("surface - each exported name has one home: no name is exported by two entries", () => {
    const entries = new Map<string, string[]>();
    let entry = "";
    for (const line of surface.split("\n")) {
      if (line === "") continue;
      if (!line.startsWith(" ")) entry = line.split(" ")[0]!;
      else {
        const name = line.trim().split(" ")[1]!;
        entries.set(name, [...(entries.get(name) ?? []), entry]);
      }
    }
    const shared = [...entries]
      .filter(([, homes]) => homes.length > 1)
      .map(([name, homes]) => `${name}: ${homes.join(" ")}`);
    expect(shared).toEqual([]);
  });

  it("surface - the root entry stays small: at most 40 values, for embedders", () => {
    const root = surface.split("\n").find((line) => line.startsWith(". ("));
    const values = Number(/\((\d+) values/.exec(root ?? "")?.[1]);
    expect(values).toBeGreaterThan(0);
    expect(values).toBeLessThanOrEqual(40);
  });
});
