/** A batch leaves once its messages hold about this many bytes; see {@link ChannelBatch}. */
export const FLUSH_BYTES = 4 * 1024 * 1024;
/** A batch leaves once it holds this many messages, so a long turn of the loop does not hold them all up. */
export const FLUSH_MESSAGES = 64;

/** Sends one batch over the channel; `done` is called once it is written or could not be. */
export type SendBatch<T> = (messages: T[], done: (error: Error | null) => void) => void;

/**
 * Messages for the other end of a process channel, sent as one array per turn of the event loop. Each `send` on a
 * channel is a serialisation and a write system call of its own on one side and a read and a
 * parse on the other; with a reply per call and several calls per `message.send`, a CPU profile
 * of the database process found 9 % of its time in writing replies, a system call each. The calls
 * and replies of one turn (a burst of writes made durable by one fsync, say) now cross together.
 *
 * The batch leaves once the event loop has run the callbacks of the I/O it found ready
 * (`setImmediate`), or sooner once it holds {@link FLUSH_MESSAGES} messages or {@link FLUSH_BYTES},
 * in the order messages were queued. Not at the end of each tick: while a storm of reconnecting
 * devices keeps the loop busy, every socket's callback is a tick of its own with a request or two,
 * and a CPU profile of the gateway found a tenth of its time in the writes of those small batches
 * (bench/NOTES.md, "h/cap"); an idle loop still sends at once, in the same turn. A
 * message is copied whole on both sides, and one that grew past 2 GiB (a tick of replies to
 * history pages of long messages) cannot be read back at all, which ended the process that got it.
 * A message of that size or more leaves alone, after those queued before it.
 */
export class ChannelBatch<T> {
  readonly #send: SendBatch<T>;
  /**
   * The messages waiting, and beside them what to call should each never leave: two arrays
   * rather than an entry object per message, and once sent only the callbacks are kept until the
   * write is done, so a slow write does not keep the messages alive (nor into the old generation).
   */
  #messages: T[] = [];
  #failures: Array<(error: Error) => void> = [];
  #bytes = 0;

  constructor(send: SendBatch<T>) {
    this.#send = send;
  }

  /**
   * Queues `message`; `failed` is called should it never leave (a closed channel, a value that
   * cannot be copied). `bytes` is about its size (see {@link roughBytes}), for messages that can be large.
   */
  push(message: T, failed: (error: Error) => void = () => undefined, bytes = 0): void {
    if (bytes >= FLUSH_BYTES) {
      this.#flush();
      return this.#one(message, failed);
    }
    this.#bytes += bytes;
    this.#failures.push(failed);
    const queued = this.#messages.push(message);
    if (queued === 1) setImmediate(() => this.#flush());
    if (this.#bytes >= FLUSH_BYTES || queued >= FLUSH_MESSAGES) this.#flush();
  }

  #flush(): void {
    const messages = this.#messages;
    const failures = this.#failures;
    if (messages.length === 0) return;
    this.#messages = [];
    this.#failures = [];
    this.#bytes = 0;
    try {
      this.#send(messages, (error) => {
        if (error) for (const failed of failures) failed(error);
      });
    } catch (error) {
      // A message that cannot be copied to another process (a function, say) must fail alone:
      // the others go one by one.
      if (messages.length === 1) return failures[0](error as Error);
      for (let i = 0; i < messages.length; i++) this.#one(messages[i], failures[i]);
    }
  }

  #one(message: T, failed: (error: Error) => void): void {
    try {
      this.#send([message], (error) => error && failed(error));
    } catch (error) {
      failed(error as Error);
    }
  }
}

/**
 * About the bytes `value` takes on the channel: its strings and byte arrays, and a little for every
 * other value. Cheap next to the copy itself, and all a batch needs to know when to leave.
 */
export function roughBytes(value: unknown, depth = 0): number {
  if (typeof value === "string") return value.length;
  if (value instanceof Uint8Array) return value.byteLength;
  // Past a depth no stored record reaches, what is left is counted as small rather than walked.
  if (typeof value !== "object" || value === null || depth > 32) return 8;
  let bytes = 8;
  if (Array.isArray(value)) for (const item of value) bytes += roughBytes(item, depth + 1);
  else for (const key in value) bytes += key.length + roughBytes((value as Record<string, unknown>)[key], depth + 1);
  return bytes;
}
