/**
 * The comparison behind `Change.expectChannels`: a stored record is "as read" when it holds the
 * same JSON value, whatever the order of its keys and whether absent members were `undefined`.
 * @module
 */

/**
 * True when `a` and `b` are the same JSON value: objects with the same members (key order and
 * `undefined` members ignored), arrays with the same items in order, equal primitives. What a
 * storage compares a stored channel with when it checks `Change.expectChannels`.
 */
export function sameRecord(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => sameRecord(item, b[i]));
  }
  const left = definedKeys(a);
  const right = definedKeys(b);
  if (left.length !== right.length) return false;
  const other = b as Record<string, unknown>;
  return left.every((key) => Object.hasOwn(other, key) && sameRecord((a as Record<string, unknown>)[key], other[key]));
}

function definedKeys(record: object): string[] {
  return Object.entries(record)
    .filter(([, value]) => value !== undefined)
    .map(([key]) => key);
}
