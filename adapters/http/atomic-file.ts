import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";

/**
 * Replaces a whole file: temp file in the same folder, mode 0600, fsync, rename over the old
 * file, so a reader sees the old or the new content and never a torn one. The folder must exist.
 * On failure the temp file is removed and the error thrown as it came.
 */
export async function writeFileAtomic(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(temp, "wx", 0o600);
    await handle.chmod(0o600); // the umask may have taken bits away; never added any
    await handle.writeFile(text, "utf8");
    await handle.sync();
    await handle.close();
    handle = undefined;
    await fs.rename(temp, file);
  } catch (error) {
    await handle?.close().catch(() => {});
    await fs.rm(temp, { force: true }).catch(() => {});
    throw error;
  }
  // Make the rename itself durable; not every platform can open a folder, hence best effort.
  try {
    const folder = await fs.open(dir, "r");
    await folder.sync().finally(() => folder.close());
  } catch {
    /* best effort */
  }
}
