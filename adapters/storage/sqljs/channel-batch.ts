/** Sends one batch over the channel; `done` is called once it is written or could not be. */
export type SendBatch<T> = (messages: T[], done: (error: Error | null) => void) => void;

/**
 * Messages for the other end of a process channel, sent as one array per tick. Each `send` on a
 * channel is a serialisation and a write system call of its own on one side and a read and a
 * parse on the other; with a reply per call and several calls per `message.send`, the database
 * process spent more of its time writing replies than running SQL (bench/RESULTS.md). The calls
 * and replies of one tick (a burst of writes made durable by one fsync, say) now cross together.
 *
 * The batch leaves at the end of the tick (`process.nextTick`, after the promise callbacks queued
 * meanwhile), in the order messages were queued.
 */
export class ChannelBatch<T> {
  readonly #send: SendBatch<T>;
  #queue: Array<{ message: T; failed: (error: Error) => void }> = [];

  constructor(send: SendBatch<T>) {
    this.#send = send;
  }

  /** Queues `message`; `failed` is called should it never leave (a closed channel, a value that cannot be copied). */
  push(message: T, failed: (error: Error) => void = () => undefined): void {
    if (this.#queue.push({ message, failed }) === 1) process.nextTick(() => this.#flush());
  }

  #flush(): void {
    const queue = this.#queue;
    this.#queue = [];
    try {
      this.#send(
        queue.map((q) => q.message),
        (error) => {
          if (error) for (const q of queue) q.failed(error);
        },
      );
    } catch (error) {
      // A message that cannot be copied to another process (a function, say) must fail alone:
      // the others go one by one.
      if (queue.length === 1) return queue[0].failed(error as Error);
      for (const q of queue) this.#one(q.message, q.failed);
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
