// The order files start in. vitest's own order runs a group's projects one after another (all of
// browser, then integration, then process) and, on a clean clone, with no timings cached, larger
// files first: a 79-second file could start last and run alone. Here every group starts its
// longest files first, whatever their project, from the seconds this machine measured
// (test/durations.json, written by scripts/test-durations.mjs), so the last minute is not one file.
// Files not in the table keep vitest's order after them.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const root = new URL("../..", import.meta.url).pathname;
const table = new URL("../durations.json", import.meta.url);
const durations: Record<string, number> = JSON.parse(readFileSync(table, "utf8"));

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const seconds = (spec: TestSpecification) => durations[relative(root, spec.moduleId)] ?? 0;
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    const place = new Map(ordered.map((spec, i) => [spec, i]));
    return ordered.toSorted(
      (a, b) => group(a) - group(b) || seconds(b) - seconds(a) || (place.get(a) ?? 0) - (place.get(b) ?? 0),
    );
  }
}
