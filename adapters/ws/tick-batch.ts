import type { Duplex } from "node:stream";

/**
 * Frames written to one socket within one tick leave in one write. `ws` writes every frame as a
 * write system call of its own (header and payload in one `writev`), and on loopback, where the
 * kernel does the receiving side's work in the sender's call too, those calls were the largest
 * part of a busy serving process's CPU (37 % in a profile of bench/storage-sqljs-wire.ts). A
 * turn's frames, a response and the frames it caused are usually written in the same tick.
 *
 * Returns the function to call before each frame: the first call of a tick corks the socket and
 * the end of the tick (`process.nextTick`, which runs after the promise callbacks queued
 * meanwhile) uncorks it, which writes everything queued, in order. `ws` corks around each frame
 * as well; corks nest, so its frames wait for ours.
 */
export function tickBatch(socket: Duplex): () => void {
  let corked = false;
  const flush = () => {
    corked = false;
    socket.uncork();
  };
  return () => {
    if (corked || socket.destroyed) return;
    corked = true;
    socket.cork();
    process.nextTick(flush);
  };
}
