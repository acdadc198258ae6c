/**
 * How deep a decoded JSON value nests. A frame is refused past a fixed depth right after
 * `JSON.parse`, because everything that walks a value recursively afterwards (validation messages,
 * `JSON.stringify`, `Array.prototype.join`) overflows the stack on a deep enough one.
 * @module
 */

/** The deepest nesting of arrays and objects a client frame may have (the frame object is level 1). */
export const MAX_FRAME_DEPTH = 32;

/**
 * True when `value` nests arrays or objects deeper than `max` levels. Walks with an explicit
 * stack, so the check itself cannot overflow, and stops at the first level past `max`.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: Array<[unknown, number]> = [[value, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, depth] = next;
    if (item === null || typeof item !== "object") continue;
    if (depth > max) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === "object") pending.push([child, depth + 1]);
    }
  }
  return false;
}
