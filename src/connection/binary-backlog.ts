/**
 * Binary messages a connection has read but not yet worked off (upload chunks waiting for the media
 * store): past a bound the socket stops being read until half of it is worked off, so one
 * connection's flood neither grows memory nor holds the others up (docs/PROTOCOL.md §2.4).
 * @module
 */
import { holdReads, releaseReads, type Pausable } from "./read-pause.js";

/** Upload bytes waiting to be written before the socket is paused; it resumes at half of it. */
const BINARY_QUEUE_BYTES = 1024 * 1024;
/**
 * Binary messages waiting, whatever their size: each costs its queue entry, which a flood of tiny
 * ones makes the larger part. Past it the socket is paused too (a flood of 3-byte messages was
 * read and queued 100,000 at a time, holding every other connection up for 130 ms).
 */
const BINARY_QUEUE_FRAMES = 1024;

/** The binary messages of one connection between being read and being worked off. */
export class BinaryBacklog {
  #bytes = 0;
  #frames = 0;
  #paused = false;

  constructor(private readonly conn: Pausable) {}

  /**
   * A message of `bytes` read now, counted until the `work` that takes it has settled: returns
   * that work, to be queued. Pauses the socket past the bound.
   */
  hold(bytes: number, work: () => Promise<void>): () => Promise<void> {
    this.#add(bytes);
    return () => work().finally(() => this.#done(bytes));
  }

  #add(bytes: number): void {
    this.#bytes += bytes;
    this.#frames++;
    if (!this.#paused && (this.#bytes > BINARY_QUEUE_BYTES || this.#frames > BINARY_QUEUE_FRAMES)) {
      this.#paused = true;
      holdReads(this.conn);
    }
  }

  /** One message worked off; resumes the socket once half the bound is free again. */
  #done(bytes: number): void {
    this.#bytes -= bytes;
    this.#frames--;
    if (this.#paused && this.#bytes <= BINARY_QUEUE_BYTES / 2 && this.#frames <= BINARY_QUEUE_FRAMES / 2) {
      this.#paused = false;
      releaseReads(this.conn);
    }
  }
}
