/**
 * Limits on the shape of a decoded frame, checked right after `JSON.parse` and before anything
 * else looks at it (docs/PROTOCOL.md §1).
 * @module
 */

/** The deepest nesting of arrays and objects a client frame may have (the frame object is level 1). */
export const MAX_FRAME_DEPTH = 32;

/** A lone surrogate: with the `u` flag a well-formed pair is one code point and does not match. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Why the text of a string (a value or a key) is refused, or undefined: U+0000, which PostgreSQL
 * cannot store or even compare, and a lone surrogate (`"\ud83d"` in JSON), which is not Unicode
 * and which PostgreSQL refuses too. Refused here, for every field of every frame, every storage
 * answers the same (docs/PROTOCOL.md §1).
 */
export function textProblem(text: string): string | undefined {
  if (text.includes("\u0000")) return "a string in a frame must not contain U+0000";
  if (LONE_SURROGATE.test(text)) return "a string in a frame must be valid Unicode (it has a lone surrogate)";
  return undefined;
}

/**
 * Why a decoded frame is refused, or undefined. Refused are nesting deeper than
 * {@link MAX_FRAME_DEPTH}, because everything that walks a value recursively afterwards
 * (validation messages, `JSON.stringify`, `Array.prototype.join`) overflows the stack on a deep
 * enough one; and a string or key that is not storable text ({@link textProblem}). Walks with an
 * explicit stack, so the check itself cannot overflow.
 */
export function frameShapeProblem(value: unknown): string | undefined {
  // Two stacks side by side rather than a [value, depth] pair per value, and keys rather than an
  // array of values per object: every frame passes here, and those were what checking one allocated.
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const item = values.pop();
    const depth = depths.pop()!;
    if (typeof item === "string") {
      const problem = textProblem(item);
      if (problem) return problem;
      continue;
    }
    if (item === null || typeof item !== "object") continue;
    if (depth > MAX_FRAME_DEPTH) return `a frame may nest arrays and objects at most ${MAX_FRAME_DEPTH} levels deep`;
    if (Array.isArray(item)) {
      for (const child of item) {
        values.push(child);
        depths.push(depth + 1);
      }
      continue;
    }
    // A decoded frame's objects are plain: every enumerable key is its own.
    for (const key in item) {
      const problem = textProblem(key);
      if (problem) return problem;
      values.push((item as Record<string, unknown>)[key]);
      depths.push(depth + 1);
    }
  }
  return undefined;
}
