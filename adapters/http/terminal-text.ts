/**
 * Text others chose, made safe to print on a terminal.
 * @module
 */

/**
 * C0 controls (tab, line feed and ESC among them), DEL and C1 controls; and the Unicode
 * characters that reorder or break a line as shown (bidirectional controls, line and paragraph
 * separators).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escaped(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * `text` with every control character written out as an escape (`\x1b`, `\x9b`, `\x7f`, `\u202e`),
 * so that printing it cannot move the cursor, change colours, set the window title, start a new
 * line or reorder the line around it. Use it on every name a command line prints that someone else
 * may have chosen: a device name given at pairing, a username read from the users file, a channel
 * name, a schedule's error. Everything else, other languages and emoji included, is kept as is.
 *
 * @example
 * ```ts
 * import { terminalText } from "chat-gateway/cli";
 * process.stdout.write(`${terminalText(device.name)}\n`); // "\x1b]0;pwned\x07" prints as typed here
 * ```
 */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, escaped);
}
