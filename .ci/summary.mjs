// Prints the plain closing line CI reads: "Tests: N passed, N failed" (from vitest's JSON report).
import { readFileSync } from "node:fs";
const report = JSON.parse(readFileSync("test-results/vitest.json", "utf8"));
const skipped = report.numPendingTests + (report.numTodoTests ?? 0);
console.log(
  `Tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ""}`,
);
process.exit(report.numTotalTests > 0 && report.numFailedTests === 0 ? 0 : 1);
