#!/usr/bin/env node
// Writes test/durations.json from the last run's report (test-results/vitest.json): each file that
// took 3 s or more, with its seconds, for test/setup/slow-first.ts to start the longest files first.
// Run it after a whole `npm test` on the machine the suite is sized for; figures are rounded to the
// second, so a rerun on the same machine changes few lines.
import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const report = JSON.parse(readFileSync(`${root}test-results/vitest.json`, "utf8"));
const seconds = {};
for (const file of report.testResults) {
  const s = Math.round((file.endTime - file.startTime) / 1000);
  if (s >= 3) seconds[relative(root, file.name)] = s;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1)));
writeFileSync(`${root}test/durations.json`, `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/durations.json: ${Object.keys(sorted).length} files of 3 s or more`);
