/**
 * The CPU time a process and its descendants have spent, from /proc: bench/capacity.ts reads it
 * before and after the hellos and the storm.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";

/** CPU seconds (user and system, every thread) a process has spent so far, and its descendants. */
export interface TreeCpu {
  /** The process and its descendants. */
  tree: number;
  /** The descendants alone: the gateway's database runs in a child of its own. */
  children: number;
}

/** {@link TreeCpu} of `root`, from one pass over /proc; zeros where there is no /proc. */
export function treeCpu(root: number): TreeCpu {
  const tick = 100; // USER_HZ: 100 on every Linux that Node runs on
  const stats = new Map<number, { parent: number; cpu: number }>();
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    // no /proc
  }
  for (const pid of entries) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // Fields after the command name (which may hold spaces), from field 3 (state) on.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      stats.set(Number(pid), { parent: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / tick });
    } catch {
      // gone meanwhile
    }
  }
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, stat] of stats)
      if (!tree.has(pid) && tree.has(stat.parent)) {
        tree.add(pid);
        grew = true;
      }
  }
  let children = 0;
  for (const pid of tree) if (pid !== root) children += stats.get(pid)?.cpu ?? 0;
  return { tree: children + (stats.get(root)?.cpu ?? 0), children };
}
