// The public surface is a reviewed diff: every entry's exported names are committed in
// test/package/surface.txt, and a change to any of them fails here until that file changes with it
// (`node scripts/api-surface.mjs --write`).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { apiSurface, surfaceFile } from "../../scripts/api-surface.mjs";

describe("public surface", () => {
  const surface = apiSurface();

  it("surface - every entry's exported names are the committed ones", () => {
    expect(surface).toBe(readFileSync(surfaceFile, "utf8"));
  });

  it("surface - the root entry stays small: at most 40 values, for embedders", () => {
    const root = surface.split("\n").find((line) => line.startsWith(". ("));
    const values = Number(/\((\d+) values/.exec(root ?? "")?.[1]);
    expect(values).toBeGreaterThan(0);
    expect(values).toBeLessThanOrEqual(40);
  });
});
