import { fdatasyncSync, writeSync } from "node:fs";
import { open, readFile, truncate, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import * as zlib from "node:zlib";
import { PRIVATE_FILE } from "./file-modes.js";

/** Bytes before each record's payload: its length and its CRC-32, both uint32 little-endian. */
const RECORD_HEADER = 8;
/** A length above this is damage, not a record: nothing the storage writes comes near it. */
const MAX_RECORD = 256 * 1024 * 1024;

let table: Uint32Array | undefined;
function crc32Fallback(data: Uint8Array): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** CRC-32 (IEEE); native `zlib.crc32` where the Node version has it (20.15 and later). */
export const crc32: (data: Uint8Array) => number =
  typeof (zlib as { crc32?: unknown }).crc32 === "function" ? (data) => zlib.crc32(data) >>> 0 : crc32Fallback;

/** `journal-00000042.log` for generation 42; names sort like the generations they hold. */
export function journalName(gen: number): string {
  return `journal-${String(gen).padStart(8, "0")}.log`;
}

/** The generation of a journal file name, or undefined for any other file. */
export function journalGen(name: string): number | undefined {
  const m = /^journal-(\d{8,})\.log$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** One journal record: length, checksum, then the UTF-8 payload. */
export function encodeRecord(payload: string): Buffer {
  const body = Buffer.from(payload, "utf8");
  const out = Buffer.allocUnsafe(RECORD_HEADER + body.length);
  out.writeUInt32LE(body.length, 0);
  out.writeUInt32LE(crc32(body), 4);
  body.copy(out, RECORD_HEADER);
  return out;
}

/** What a journal file holds up to its first damaged record. */
export interface JournalContents {
  payloads: string[];
  /** Bytes of intact records from the start of the file. */
  validBytes: number;
  totalBytes: number;
  /** Why reading stopped before the end of the file, when it did. */
  damage?: string;
}

/** Reads the intact records of a journal file; a torn or corrupt tail ends the read, never throws. */
export async function readJournal(path: string): Promise<JournalContents> {
  const bytes = await readFile(path);
  const payloads: string[] = [];
  let at = 0;
  let damage: string | undefined;
  while (at < bytes.length) {
    if (bytes.length - at < RECORD_HEADER) {
      damage = `torn record header at byte ${at}`;
      break;
    }
    const length = bytes.readUInt32LE(at);
    const sum = bytes.readUInt32LE(at + 4);
    if (length > MAX_RECORD || at + RECORD_HEADER + length > bytes.length) {
      damage = `torn record at byte ${at}`;
      break;
    }
    const body = bytes.subarray(at + RECORD_HEADER, at + RECORD_HEADER + length);
    if (crc32(body) !== sum) {
      damage = `checksum mismatch at byte ${at}`;
      break;
    }
    payloads.push(body.toString("utf8"));
    at += RECORD_HEADER + length;
  }
  return { payloads, validBytes: at, totalBytes: bytes.length, damage };
}

/** Cuts a journal back to its intact records, so new appends are never stranded behind damage. */
export async function truncateJournal(path: string, validBytes: number): Promise<void> {
  await truncate(path, validBytes);
  const fh = await open(path, "r+");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** fsync a directory, so a file created or renamed in it survives a crash. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

interface Pending {
  gen: number;
  record: Buffer;
  lsn: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Appends records to the journal of a generation with group commit: the records appended in one
 * tick, and whatever arrives while one write-and-fsync is in flight, go out together, so many
 * concurrent writers share one fsync. A record's promise resolves once it is on disk. After an
 * I/O failure the writer is broken: every pending and later append rejects, since the in-memory
 * state is then ahead of disk.
 *
 * `blocking` writes and fsyncs on the calling thread, for a thread that has nothing else to do
 * meanwhile (the database process): each trip to libuv's thread pool and back waits for a thread
 * and then for the event loop, and on a busy machine those waits were many times the disk's
 * time (16 paced writers beside two busy processes: p50 0.14 ms and p99 4 to 15 ms blocking,
 * 1.2 to 5.1 and 34 to 91 ms through the pool; bench/RESULTS.md). Without it (the storage
 * in the serving process) the thread pool does the I/O, so a slow disk never holds up the event
 * loop.
 */
export class JournalWriter {
  readonly #dir: string;
  readonly #blocking: boolean;
  #queue: Pending[] = [];
  #waiters: Array<{ lsn: number; resolve: () => void; reject: (e: unknown) => void }> = [];
  #flushing = false;
  #fh: FileHandle | undefined;
  #fhGen = -1;
  #appended = 0;
  #durable = 0;
  #failed: unknown;
  #idle: Array<() => void> = [];

  constructor(dir: string, options: { blocking?: boolean } = {}) {
    this.#dir = dir;
    this.#blocking = options.blocking ?? false;
  }

  /** The sequence number of the latest record handed to {@link append}. */
  get appendedLsn(): number {
    return this.#appended;
  }

  /** The I/O error that broke the writer, if any. */
  get failure(): unknown {
    return this.#failed;
  }

  /** Queues a record for the journal of `gen`; resolves once it is fsynced. */
  append(gen: number, record: Buffer): Promise<void> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    const lsn = ++this.#appended;
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ gen, record, lsn, resolve, reject });
      if (this.#flushing) return;
      this.#flushing = true;
      // At the end of the tick, so the records of a burst of writes share one write and one fsync.
      process.nextTick(() => void this.#flush());
    });
  }

  /** Resolves once every record up to `lsn` is on disk. */
  waitDurable(lsn: number = this.#appended): Promise<void> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    if (lsn <= this.#durable) return Promise.resolve();
    return new Promise((resolve, reject) => this.#waiters.push({ lsn, resolve, reject }));
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length) {
        const batch = this.#queue;
        this.#queue = [];
        try {
          let from = 0;
          while (from < batch.length) {
            const gen = batch[from].gen;
            let to = from;
            while (to < batch.length && batch[to].gen === gen) to++;
            await this.#write(gen, batch.slice(from, to));
            from = to;
          }
        } catch (error) {
          this.#fail(error, batch);
          return;
        }
        this.#durable = batch[batch.length - 1].lsn;
        for (const p of batch) p.resolve();
        const due = this.#waiters.filter((w) => w.lsn <= this.#durable);
        this.#waiters = this.#waiters.filter((w) => w.lsn > this.#durable);
        for (const w of due) w.resolve();
      }
    } finally {
      this.#flushing = false;
      if (!this.#queue.length) for (const done of this.#idle.splice(0)) done();
    }
  }

  async #write(gen: number, records: Pending[]): Promise<void> {
    if (this.#fhGen !== gen) {
      await this.#fh?.close();
      this.#fh = undefined;
      this.#fh = await open(join(this.#dir, journalName(gen)), "a", PRIVATE_FILE);
      this.#fhGen = gen;
      await syncDir(this.#dir);
    }
    const buf = records.length === 1 ? records[0].record : Buffer.concat(records.map((r) => r.record));
    let off = 0;
    if (this.#blocking) {
      while (off < buf.length) off += writeSync(this.#fh!.fd, buf, off, buf.length - off);
      fdatasyncSync(this.#fh!.fd);
      return;
    }
    while (off < buf.length) off += (await this.#fh!.write(buf, off, buf.length - off)).bytesWritten;
    await this.#fh!.datasync();
  }

  #fail(error: unknown, batch: Pending[]): void {
    this.#failed = error;
    for (const p of [...batch, ...this.#queue.splice(0)]) p.reject(error);
    for (const w of this.#waiters.splice(0)) w.reject(error);
  }

  /** Waits for every queued record, then closes the file. */
  async close(): Promise<void> {
    if (this.#flushing || this.#queue.length) await new Promise<void>((r) => this.#idle.push(r));
    await this.#fh?.close();
    this.#fh = undefined;
    this.#fhGen = -1;
  }
}
