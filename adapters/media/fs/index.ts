/**
 * A {@link MediaStore} that keeps each item as one file in a folder. Uploads stream into a
 * temporary file next to their final place and are renamed into it on commit, so a reader never
 * sees a partial file and a crash leaves at most a stray `.tmp` file (removed once it is a day old).
 *
 * ```ts
 * import { fsMediaStore } from "chat-gateway/media/fs";
 * const media = fsMediaStore({ dir: "./data/media" });
 * ```
 * @module
 */
import { createHash, randomUUID } from "node:crypto";
import { open, readdir, rename, stat, unlink, type FileHandle } from "node:fs/promises";
import { join, resolve } from "node:path";
import { resolveLogger } from "chat-gateway";
import { GatewayError } from "chat-gateway/protocol";
import type { Logger, MediaId, MediaStore, MediaWriter, Owner } from "chat-gateway";
import { makePrivateDir } from "chat-gateway/storage";

/** Options of {@link fsMediaStore}. */
export interface FsMediaStoreOptions {
  /**
   * The folder for the files; created by {@link FsMediaStore.prepare} or on first use. Used only
   * by this store. It is made private to the owner (0700; an existing one with looser access is
   * tightened, with a warning to {@link FsMediaStoreOptions.logger}) and every file in it is 0600,
   * whatever the umask: the files are the users' media.
   */
  dir: string;
  /** Receives the warning that an existing folder was tightened. Default: the console, prefixed `chat-gateway/media/fs:`. */
  logger?: Logger;
}

/** The {@link MediaStore} of {@link fsMediaStore}, which can be readied before its first upload. */
export interface FsMediaStore extends MediaStore {
  /**
   * Creates the folder (0700) or tightens an existing one open to other users (with a warning),
   * and removes temporary files a crash left behind; done once, and on the first upload if not
   * before. Call it at start, so a folder open to others does not stay so until the first upload.
   * @throws the file system's error when the folder cannot be created or its mode changed; a
   * later call tries again
   */
  prepare(): Promise<void>;
}

const TMP_SUFFIX = ".tmp";
/** No upload runs this long; a temporary file that old was left behind by a crash. */
const STALE_TMP_MS = 24 * 60 * 60 * 1000;

/**
 * Create a {@link MediaStore} backed by files in `dir`. File names are hashes of owner and media
 * id, so any id string is safe on disk and one owner can never reach another's files.
 *
 * A read rejects with a `not_found` {@link GatewayError} when the item does not exist (or is not
 * committed yet).
 *
 * @example
 * ```ts
 * const media = fsMediaStore({ dir: "/var/lib/chat-gateway/media" });
 * const writer = await media.createWriter(owner, "m1");
 * await writer.write(bytes);
 * await writer.commit();
 * for await (const chunk of media.read(owner, "m1")) process.stdout.write(chunk);
 * ```
 */
export function fsMediaStore(options: FsMediaStoreOptions): FsMediaStore {
  if (options === null || typeof options !== "object" || typeof options.dir !== "string" || options.dir === "") {
    throw new TypeError("fsMediaStore: `dir` must be a non-empty folder path");
  }
  const logger = resolveLogger("fsMediaStore", "chat-gateway/media/fs:", options.logger);
  const dir = resolve(options.dir);
  let ready: Promise<void> | undefined;

  function prepare(): Promise<void> {
    ready ??= (async () => {
      const loosened = await makePrivateDir(dir, "media store");
      if (loosened) logger.warn(loosened);
      await removeStaleTemporaries(dir);
    })().catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  }

  function pathOf(owner: Owner, mediaId: MediaId): string {
    return join(dir, fileName(owner, mediaId));
  }

  return {
    prepare,

    async createWriter(owner: Owner, mediaId: MediaId): Promise<MediaWriter> {
      await prepare();
      const target = pathOf(owner, mediaId);
      const temp = `${target}.${randomUUID()}${TMP_SUFFIX}`;
      const handle = await open(temp, "wx", 0o600);
      return new FileWriter(handle, temp, target, dir);
    },

    read(owner: Owner, mediaId: MediaId): AsyncIterable<Uint8Array> {
      const path = pathOf(owner, mediaId);
      return {
        async *[Symbol.asyncIterator]() {
          let handle: FileHandle;
          try {
            handle = await open(path, "r");
          } catch (error) {
            if (isErrno(error, "ENOENT")) {
              throw new GatewayError("not_found", `media ${JSON.stringify(mediaId)} not found`, { cause: error });
            }
            throw error;
          }
          // The open handle keeps the bytes readable even if the item is deleted mid-read.
          yield* handle.createReadStream({ highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>;
        },
      };
    },

    async delete(owner: Owner, mediaIds: MediaId[]): Promise<void> {
      await Promise.all(
        mediaIds.map(async (mediaId) => {
          try {
            await unlink(pathOf(owner, mediaId));
          } catch (error) {
            if (!isErrno(error, "ENOENT")) throw error;
          }
        }),
      );
    },
  };
}

type WriterState = "open" | "committing" | "committed" | "aborted";

class FileWriter implements MediaWriter {
  readonly #handle: FileHandle;
  readonly #temp: string;
  readonly #target: string;
  readonly #dir: string;
  #state: WriterState = "open";
  /** Next file offset; positional writes keep order even when writes are not awaited one by one. */
  #position = 0;
  #writes: Promise<void> = Promise.resolve();
  #failure: unknown;
  #closing: Promise<void> | undefined;

  constructor(handle: FileHandle, temp: string, target: string, dir: string) {
    this.#handle = handle;
    this.#temp = temp;
    this.#target = target;
    this.#dir = dir;
  }

  write(chunk: Uint8Array): Promise<void> {
    if (this.#state !== "open") return Promise.reject(new Error(`media writer is ${this.#state}; cannot write`));
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const position = this.#position;
    this.#position += chunk.byteLength;
    const done = writeFully(this.#handle, chunk, position).catch((error: unknown) => {
      this.#failure ??= diskFull(error);
      throw this.#failure;
    });
    this.#writes = this.#writes.then(
      () => done.catch(() => undefined),
      () => undefined,
    );
    return done;
  }

  async commit(): Promise<void> {
    if (this.#state !== "open") throw new Error(`media writer is ${this.#state}; cannot commit`);
    this.#state = "committing";
    try {
      await this.#writes;
      if (this.#failure !== undefined) throw this.#failure;
      await this.#handle.sync();
      await this.#handle.close();
      await rename(this.#temp, this.#target);
      await syncDir(this.#dir);
      this.#state = "committed";
    } catch (error) {
      this.#state = "open";
      await this.abort();
      throw diskFull(error);
    }
  }

  abort(): Promise<void> {
    if (this.#state === "committed" || this.#state === "committing") return Promise.resolve();
    this.#state = "aborted";
    this.#closing ??= (async () => {
      await this.#writes;
      await this.#handle.close().catch(() => undefined);
      await unlink(this.#temp).catch((error: unknown) => {
        if (!isErrno(error, "ENOENT")) throw error;
      });
    })();
    return this.#closing;
  }
}

async function writeFully(handle: FileHandle, chunk: Uint8Array, position: number): Promise<void> {
  let offset = 0;
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset, position + offset);
    offset += bytesWritten;
  }
}

/** The rename is only durable once the folder entry is on disk too. */
async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch {
    // Some platforms (Windows) cannot open or fsync a folder; the file itself is synced already.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

async function removeStaleTemporaries(dir: string): Promise<void> {
  const cutoff = Date.now() - STALE_TMP_MS;
  for (const name of await readdir(dir)) {
    if (!name.endsWith(TMP_SUFFIX)) continue;
    const path = join(dir, name);
    try {
      if ((await stat(path)).mtimeMs < cutoff) await unlink(path);
    } catch {
      // Gone already, or another process is cleaning up too.
    }
  }
}

function fileName(owner: Owner, mediaId: MediaId): string {
  // JSON keeps the pair unambiguous: ("a", "b:c") and ("a:b", "c") hash differently.
  return createHash("sha256")
    .update(JSON.stringify([owner, mediaId]))
    .digest("hex");
}

/** A full disk is named as such, to the client as well; any other error is left as it is. */
function diskFull(error: unknown): unknown {
  if (!isErrno(error, "ENOSPC") && !isErrno(error, "EDQUOT")) return error;
  return new GatewayError("internal", "the server's disk is full: the media was not saved; try again later", {
    cause: error,
  });
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as NodeJS.ErrnoException).code === code;
}
