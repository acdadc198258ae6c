/**
 * Limits on the shape of a decoded frame, checked right after `JSON.parse` and before anything
 * else looks at it (docs/PROTOCOL.md §1).
 * @module
 */

/** The deepest nesting of arrays and objects a client frame may have (the frame object is level 1). */
export const MAX_FRAME_DEPTH = 32;

/**
 * Why a decoded frame is refused, or undefined. Refused are nesting deeper than
 * {@link MAX_FRAME_DEPTH}, because everything that walks a value recursively afterwards
 * (validation messages, `JSON.stringify`, `Array.prototype.join`) overflows the stack on a deep
 * enough one; and U+0000 in a string, which PostgreSQL cannot store or even compare. Walks with an
 * explicit stack, so the check itself cannot overflow.
 */
export function frameShapeProblem(value: unknown): string | undefined {
  const pending: Array<[unknown, number]> = [[value, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, depth] = next;
    if (typeof item === "string") {
      if (item.includes("\u0000")) return "a string in a frame must not contain U+0000";
      continue;
    }
    if (item === null || typeof item !== "object") continue;
    if (depth > MAX_FRAME_DEPTH) return `a frame may nest arrays and objects at most ${MAX_FRAME_DEPTH} levels deep`;
    for (const child of Array.isArray(item) ? item : Object.values(item)) pending.push([child, depth + 1]);
  }
  return undefined;
}
