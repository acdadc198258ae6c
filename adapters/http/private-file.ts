/**
 * Files that only the account running the server may change: the users file and the paired
 * devices' file (docs/PROTOCOL.md §9.7, §16). Whoever else can write one can give themselves a
 * login or a device token, so such a file is not read at all.
 * @module
 */
import { promises as fs } from "node:fs";

/** A file that group or other users may write: its contents are not trusted. */
export class WritableByOthers extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WritableByOthers";
  }
}

/**
 * The file's text, read through one handle so the mode checked is the mode of what is read.
 * @param what how the refusal names the file, such as `"user store"`
 * @param contents what the person should look over before trusting it again, such as `"the users"`
 * @throws {WritableByOthers} when group or other users may write the file (not on Windows, which
 * has no such bits), naming the file, its mode and the fix
 */
export async function readPrivateText(file: string, what: string, contents: string): Promise<string> {
  const handle = await fs.open(file, "r");
  try {
    const mode = (await handle.stat()).mode & 0o777;
    if (process.platform !== "win32" && (mode & 0o022) !== 0) {
      throw new WritableByOthers(
        `${what} ${file} is writable by other users (mode ${mode.toString(8)}); check ${contents} in it, then chmod 600 it`,
      );
    }
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}
