/**
 * Helpers shared by the HTTP push senders (internal; not an entry point).
 * @module
 */

/** 4xx answers cannot succeed on a retry, except 429, which asks for one later. */
export function isPermanentStatus(status: number): boolean {
  return status >= 400 && status < 500 && status !== 429;
}

/** Cut `text` to at most `maxBytes` of UTF-8 on a character boundary, marking the cut with "…". */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const ellipsis = "…";
  let budget = maxBytes - Buffer.byteLength(ellipsis, "utf8");
  let out = "";
  for (const char of text) {
    budget -= Buffer.byteLength(char, "utf8");
    if (budget < 0) break;
    out += char;
  }
  return out + ellipsis;
}

/** A fetch failure's message; undici hides the useful part (ECONNREFUSED, timeout) in `cause`. */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
