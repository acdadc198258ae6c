import { open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { crc32, syncDir } from "./journal.js";

const MAGIC = Buffer.from("CGSNAP01", "latin1");
/** Magic, uint64 length of the database bytes, uint32 CRC-32 of them. */
const HEADER = 20;
const CHUNK = 4 * 1024 * 1024;
const SYNC_EVERY = 32 * 1024 * 1024;

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
 * then renamed into place and the folder fsynced.
 */
export async function writeSnapshot(dir: string, gen: number, db: Uint8Array): Promise<string> {
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header, 0);
  header.writeBigUInt64LE(BigInt(db.length), 8);
  header.writeUInt32LE(crc32(db), 16);
  const final = join(dir, snapshotName(gen));
  const tmp = `${final}.tmp`;
  const fh = await open(tmp, "w");
  try {
    await fh.write(header, 0, HEADER);
    let off = 0;
    let unsynced = 0;
    while (off < db.length) {
      const n = (await fh.write(db, off, Math.min(CHUNK, db.length - off))).bytesWritten;
      off += n;
      unsynced += n;
      // Flushing as it goes keeps a large snapshot from piling up dirty pages that the journal's
      // next fsync would then have to wait behind.
      if (unsynced >= SYNC_EVERY) {
        await fh.datasync();
        unsynced = 0;
      }
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, final);
  await syncDir(dir);
  return final;
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
