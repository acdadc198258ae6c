/**
 * A command line run by root acts as the owner of the users file's folder
 * (docs/PROTOCOL.md §10.4), so the files it writes stay the server's.
 * @module
 */
import { promises as fs } from "node:fs";
import path from "node:path";
import { UserStoreError } from "./user-store.js";

/** The folder `file` is in, or the nearest one above it that exists (the CLI creates the rest). */
async function nearestFolder(file: string): Promise<string> {
  let folder = path.dirname(file);
  for (;;) {
    try {
      await fs.stat(folder);
      return folder;
    } catch (error) {
      const parent = path.dirname(folder);
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" || parent === folder) return folder;
      folder = parent;
    }
  }
}

/**
 * Run by root (`uid` 0), becomes the owner of the users file's folder: a root-owned 0600 users file,
 * or root-owned database files left by an adoption, would lock out a server that runs as a service
 * account. A folder owned by root, or a platform without `setuid`, leaves the process as it is.
 */
export async function becomeFolderOwner(file: string, uid: number | undefined): Promise<void> {
  if (uid !== 0 || typeof process.setuid !== "function" || typeof process.setgid !== "function") return;
  const owner = await fs.stat(await nearestFolder(file)).catch(() => undefined);
  if (owner === undefined || owner.uid === 0) return;
  try {
    process.setgroups?.([owner.gid]);
    process.setgid(owner.gid);
    process.setuid(owner.uid);
  } catch (error) {
    throw new UserStoreError(
      `cannot act as the owner (uid ${owner.uid}) of the folder of ${file}: ${(error as Error).message}; run the command as that user`,
      { cause: error },
    );
  }
}
