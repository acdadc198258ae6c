// The request line of one admin socket connection, bounded (docs/PROTOCOL.md §17.4): a client that
// sends nothing, or sends without end, is answered with one error line and let go, so it holds
// neither memory nor its connection.
import type { Socket } from "node:net";

/** At most this many bytes before the line feed, which must arrive within this many milliseconds. */
export const ADMIN_LINE_LIMITS = { maxBytes: 64 * 1024, timeoutMs: 10_000 } as const;

/** How long a refused client may go on sending (read and dropped) before it is let go. */
const REFUSED_GRACE_MS = 1_000;

/**
 * Reads and drops what a refused client still sends, for a short while: closing on unread input
 * fails the client's next write, and a client whose write fails may never read the error line.
 */
function discardUntilGone(socket: Socket): void {
  const letGo = setTimeout(() => socket.destroy(), REFUSED_GRACE_MS);
  socket.once("close", () => clearTimeout(letGo));
  socket.on("data", () => undefined).resume();
}

/**
 * Resolves with the socket's first line (without its line feed) and stops reading; anything after
 * it is not kept. Past a bound it answers `{"ok": false, "error": …}` and closes the connection,
 * and resolves undefined, as it does when the client goes away first.
 */
export function readRequestLine(socket: Socket, limits = ADMIN_LINE_LIMITS): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (line: string | undefined) => {
      clearTimeout(timer);
      socket.off("data", onData).off("end", onGone).off("close", onGone);
      socket.pause();
      resolve(line);
    };
    const refuse = (error: string) => {
      stop(undefined);
      socket.end(`${JSON.stringify({ ok: false, error })}\n`);
      discardUntilGone(socket);
    };
    const onData = (chunk: Buffer) => {
      const end = chunk.indexOf(0x0a);
      const length = size + (end < 0 ? chunk.length : end);
      if (length > limits.maxBytes)
        return refuse(`the request line is longer than ${limits.maxBytes} bytes; the connection is closed`);
      if (end < 0) {
        chunks.push(chunk);
        size = length;
        return;
      }
      chunks.push(chunk.subarray(0, end));
      stop(Buffer.concat(chunks).toString("utf8"));
    };
    const onGone = () => {
      stop(undefined);
      socket.destroy();
    };
    const timer = setTimeout(
      () => refuse(`no request line within ${limits.timeoutMs / 1000} s; the connection is closed`),
      limits.timeoutMs,
    );
    socket.on("data", onData).on("end", onGone).on("close", onGone);
  });
}
