// Writes one snapshot file of chat-gateway/storage/sqljs in a thread of its own, then exits.
// The database bytes are transferred here, not copied, and the thread's exit frees them at once.
// Left to the main thread's garbage collector, a buffer the size of the whole database could
// outlive the next export, and the process would briefly hold the database three times.
// Plain JavaScript, so that the same file loads from the TypeScript sources and from the build.
import { closeSync, fdatasyncSync, fsyncSync, openSync, writeSync } from "node:fs";
import { parentPort, workerData } from "node:worker_threads";

const CHUNK = 4 * 1024 * 1024;
// Flushing as it goes keeps a large snapshot from piling up dirty pages that the journal's next
// fsync would then have to wait behind.
const SYNC_EVERY = 32 * 1024 * 1024;

/** @param {number} fd @param {Uint8Array} bytes @param {boolean} flush */
function writeAll(fd, bytes, flush) {
  let off = 0;
  let unsynced = 0;
  while (off < bytes.length) {
    const n = writeSync(fd, bytes, off, Math.min(CHUNK, bytes.length - off));
    off += n;
    unsynced += n;
    if (flush && unsynced >= SYNC_EVERY) {
      fdatasyncSync(fd);
      unsynced = 0;
    }
  }
}

parentPort.once("message", (/** @type {Uint8Array} */ db) => {
  /** @type {{ path: string, header: Uint8Array }} */
  const { path, header } = workerData;
  try {
    const fd = openSync(path, "w");
    try {
      writeAll(fd, header, false);
      writeAll(fd, db, true);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    parentPort.postMessage({ ok: true });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String(error?.message ?? error), code: error?.code });
  }
});
