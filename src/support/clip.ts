/**
 * Text cut to a length for a label, a title or a line: what a frame or a notification shows of a
 * string whose length is not ours to choose.
 * @module
 */

/** `text` when it has at most `max` characters, else its first `max - 1` and "…". */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
