import { open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { crc32, syncDir } from "./journal.js";

const MAGIC = Buffer.from("CGSNAP01", "latin1");
/** Magic, uint64 length of the database bytes, uint32 CRC-32 of them. */
const HEADER = 20;

/**
 * The thread that writes a snapshot: next to this module, in the sources and in the build alike.
 * The CommonJS build has an empty `import.meta`; its `__filename` (the bundle) is in the same folder.
 */
const WORKER_FILE = fileURLToPath(
  new URL(
    "./sqljs-snapshot-worker.mjs",
    typeof import.meta.url === "string" ? import.meta.url : pathToFileURL(__filename),
  ),
);

/**
 * `snapshot-00000042.db`: the database as of the moment journal generation 42 began, so a start
 * loads it and replays journals 42 and later.
 */
export function snapshotName(gen: number): string {
  return `snapshot-${String(gen).padStart(8, "0")}.db`;
}

/** The generation of a snapshot file name, or undefined for any other file. */
export function snapshotGen(name: string): number | undefined {
  const m = /^snapshot-(\d{8,})\.db$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/**
 * Writes a snapshot so that it either exists whole or not at all: to a temporary file, fsynced,
 * then renamed into place and the folder fsynced. A short-lived worker thread that `db` is
 * transferred to copies it into the file: the caller's array is empty afterwards, and its memory
 * is freed as soon as the copy is done rather than whenever the garbage collector gets to it.
 * `written` is called at that moment, before the fsync.
 */
export async function writeSnapshot(dir: string, gen: number, db: Uint8Array, written?: () => void): Promise<string> {
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header, 0);
  header.writeBigUInt64LE(BigInt(db.length), 8);
  header.writeUInt32LE(crc32(db), 16);
  const final = join(dir, snapshotName(gen));
  const tmp = `${final}.tmp`;
  try {
    try {
      await writeInWorker(tmp, header, db);
    } finally {
      written?.();
    }
    // fsync covers every write to the file, whichever descriptor made it.
    const fh = await open(tmp, "r+");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, final);
  } catch (error) {
    // A half-written snapshot on a full disk would keep the space the journal needs.
    await rm(tmp, { force: true });
    throw error;
  }
  await syncDir(dir);
  return final;
}

interface WriterOutcome {
  ok: boolean;
  message?: string;
  code?: string;
}

function writeInWorker(path: string, header: Uint8Array, db: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_FILE, { workerData: { path, header } });
    let outcome: WriterOutcome | undefined;
    let failure: Error | undefined;
    worker.once("message", (m: WriterOutcome) => (outcome = m));
    worker.once("error", (error) => (failure = error));
    // Settled on exit, so the bytes are freed by the time the caller goes on.
    worker.once("exit", () => {
      if (outcome?.ok) return resolve();
      const error =
        failure ??
        Object.assign(new Error(outcome?.message ?? "the snapshot writer stopped before it finished"), {
          code: outcome?.code,
        });
      reject(error);
    });
    // Only an array that is its whole buffer can be handed over; a view into a shared buffer
    // (a small Node Buffer from the pool, say) is copied instead.
    const whole = db.byteOffset === 0 && db.byteLength === db.buffer.byteLength && db.buffer instanceof ArrayBuffer;
    try {
      worker.postMessage(db, whole ? [db.buffer as ArrayBuffer] : []);
    } catch (error) {
      void worker.terminate();
      reject(error);
    }
  });
}

/** Reads a snapshot and checks it whole; throws with the reason when it is truncated or damaged. */
export async function readSnapshot(path: string): Promise<Uint8Array> {
  const bytes = await readFile(path);
  if (bytes.length < HEADER || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new Error(`${path} is not a chat-gateway snapshot (bad header)`);
  }
  const length = Number(bytes.readBigUInt64LE(8));
  if (bytes.length - HEADER !== length) {
    throw new Error(`${path} is truncated or overlong: ${bytes.length - HEADER} of ${length} bytes`);
  }
  const db = bytes.subarray(HEADER);
  if (crc32(db) !== bytes.readUInt32LE(16)) throw new Error(`${path} is damaged (checksum mismatch)`);
  return db;
}
