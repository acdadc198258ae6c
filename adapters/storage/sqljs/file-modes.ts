import { chmod, mkdir, stat } from "node:fs/promises";
import { join } from "node:path";

/** Every file of a data folder holds messages: readable and writable by the owner only. */
export const PRIVATE_FILE = 0o600;
/** A data folder: only its owner may list or enter it. */
export const PRIVATE_DIR = 0o700;

/**
 * Creates `dir` (and missing parents) as 0700 whatever the umask, and takes group and other
 * access away from an existing one: the folder is the storage's own, and any local user who can
 * enter it could read every message. Resolves with a warning to log when an existing folder was
 * tightened.
 */
export async function makePrivateDir(dir: string): Promise<string | undefined> {
  const created = await mkdir(dir, { recursive: true, mode: PRIVATE_DIR });
  const mode = (await stat(dir)).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  await chmod(dir, mode & 0o700);
  return created === undefined
    ? `sql.js storage: ${dir} was readable by other users (mode ${mode.toString(8)}); changed it to ${(mode & 0o700).toString(8)}`
    : undefined;
}

/** Takes group and other access away from files of the folder written before modes were enforced. */
export async function makePrivateFiles(dir: string, names: string[]): Promise<void> {
  for (const name of names) {
    const path = join(dir, name);
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, PRIVATE_FILE);
  }
}
