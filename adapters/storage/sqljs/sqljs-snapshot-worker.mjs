// Writes one snapshot file of chat-gateway/storage/sqljs in a thread of its own, then exits.
// The database bytes are transferred here, not copied, and the thread's exit frees them at once.
// Left to the main thread's garbage collector, a buffer the size of the whole database could
// outlive the next export, and the process would briefly hold the database three times.
// Each 4 MiB is flushed to the disk before the next is written: written whole and fsynced once,
// 750 MB of dirty pages went to the disk in one go, and every journal fsync of the database
// process queued behind them (up to 257 ms, measured; bench/RESULTS.md). In 4 MiB steps a journal
// fsync waits for one step at most (16 ms), and the file is on disk sooner (0.6 s against 1.7).
// The caller's fsync after this thread is gone then finds nothing left to flush.
// Plain JavaScript, so that the same file loads from the TypeScript sources and from the build.
import { closeSync, fdatasyncSync, openSync, writeSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";

const CHUNK = 4 * 1024 * 1024;

/** @param {number} fd @param {Uint8Array} bytes */
function writeAll(fd, bytes) {
  let off = 0;
  while (off < bytes.length) {
    off += writeSync(fd, bytes, off, Math.min(CHUNK, bytes.length - off));
    fdatasyncSync(fd);
  }
}

parentPort.once("message", (/** @type {Uint8Array} */ db) => {
  /** @type {{ path: string, header: Uint8Array }} */
  const { path, header } = workerData;
  try {
    // Owner only, like every file of the data folder: it holds every message.
    const fd = openSync(path, "w", 0o600);
    try {
      writeAll(fd, header);
      writeAll(fd, db);
    } finally {
      closeSync(fd);
    }
    parentPort.postMessage({ ok: true });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String(error?.message ?? error), code: error?.code });
  }
});
