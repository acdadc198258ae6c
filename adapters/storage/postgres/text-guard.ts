/**
 * PostgreSQL takes only valid Unicode without U+0000 in its text and jsonb: a lone surrogate
 * (`"\ud83d"`) or U+0000 in any parameter failed deep in a query, answered `internal`. The gateway
 * refuses such text at the frame boundary (docs/PROTOCOL.md §1); this guard holds the same line
 * for code that calls the storage directly.
 * @module
 */
import { GatewayError } from "chat-gateway/protocol";

/** A lone surrogate: with the `u` flag a well-formed pair is one code point and does not match. */
const LONE_SURROGATE = /\p{Cs}/u;

function badText(text: string): boolean {
  return text.includes("\u0000") || LONE_SURROGATE.test(text);
}

/** True when a string anywhere in `value` (or a key of its objects) is text PostgreSQL refuses. */
function holdsBadText(value: unknown): boolean {
  const stack: unknown[] = [value];
  // A seen set: a value the caller built may share (or cycle through) objects.
  const seen = new Set<object>();
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (badText(item)) return true;
      continue;
    }
    if (item === null || typeof item !== "object" || ArrayBuffer.isView(item) || seen.has(item)) continue;
    seen.add(item);
    if (Array.isArray(item)) stack.push(...item);
    else
      for (const [key, child] of Object.entries(item)) {
        if (badText(key)) return true;
        stack.push(child);
      }
  }
  return false;
}

/**
 * The storage's methods, each refusing with `unsupported` (nothing sent to the database) when a
 * string in its arguments is not valid Unicode or holds U+0000.
 */
export function refusingBadText<T extends object>(members: T): T {
  const guarded: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(members)) {
    if (typeof member !== "function") {
      guarded[name] = member;
      continue;
    }
    guarded[name] = (...args: unknown[]) => {
      if (holdsBadText(args))
        return Promise.reject(
          new GatewayError(
            "unsupported",
            "text must be valid Unicode without U+0000 (a lone surrogate cannot be stored)",
          ),
        );
      return (member as (...a: unknown[]) => unknown)(...args);
    };
  }
  return guarded as T;
}
