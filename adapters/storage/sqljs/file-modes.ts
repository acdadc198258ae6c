import { chmod, stat } from "node:fs/promises";
import { join } from "node:path";

/** Every file of a data folder holds messages: readable and writable by the owner only. */
export const PRIVATE_FILE = 0o600;

/** Takes group and other access away from files of the folder written before modes were enforced. */
export async function makePrivateFiles(dir: string, names: string[]): Promise<void> {
  for (const name of names) {
    const path = join(dir, name);
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, PRIVATE_FILE);
  }
}
