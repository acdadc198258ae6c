// One clock (src/support/clock.ts): the core reads the time and sets its timers only through the
// clock the gateway is given, so a test on a manual clock drives every one of them. A direct call
// slips past that clock: the test that advances it would wait on the wall instead.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * The files that may reach for the process's own time, and why: the clock itself; an id's time
 * prefix, only an index order; the loop share, which measures how long real work held the event
 * loop. (`resolve-options.ts` names `Date.now` uncalled: stored dates when no clock is given.)
 */
const OWN_TIME = new Set(["src/support/clock.ts", "src/support/id-generator.ts", "src/support/loop-share.ts"]);

const DIRECT = /\b(?:Date\.now\(\)|performance\.now\(\)|setTimeout\(|setInterval\(|clearTimeout\(|clearInterval\()/;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

it("one clock - nothing in src/ reads the time or sets a timer but through the gateway's clock", () => {
  const direct: string[] = [];
  for (const path of sourceFiles(join(root, "src"))) {
    const file = relative(root, path).split("\\").join("/");
    if (OWN_TIME.has(file)) continue;
    readFileSync(path, "utf8")
      .split("\n")
      .forEach((line, index) => {
        // A method of a clock (`clock.setTimeout(`) is the clock; a bare call is not.
        const bare = line.replace(/\.(?:setTimeout|setInterval|clearTimeout|clearInterval)\(/g, ".x(");
        if (DIRECT.test(bare) && !/^\s*(?:\/\/|\*)/.test(line)) direct.push(`${file}:${index + 1}: ${line.trim()}`);
      });
  }
  expect(direct).toEqual([]);
});
