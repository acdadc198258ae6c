import { chmod, mkdir, stat } from "node:fs/promises";

/**
 * Creates `dir` (and missing parents) as 0700 whatever the umask, and takes group and other
 * access away from an existing one: a folder of users' data that any local user can enter, list
 * or write into lets them read the data or swap a file in it (docs/PROTOCOL.md §10.2).
 *
 * @param dir the folder
 * @param who how the warning names whose folder it is, such as `"sql.js storage"`
 * @returns the warning to log when an existing folder was tightened, naming the folder and its
 * old mode (`<who>: <dir> was readable by other users (mode 755); changed it to 700`); undefined
 * when it was created or already private
 * @throws the file system's error when the folder cannot be created or its mode changed (not its
 * owner), and an Error for a shared folder open to others with the sticky bit (such as `/tmp`)
 *
 * @example
 * ```ts
 * import { makePrivateDir } from "chat-gateway/storage";
 * const warning = await makePrivateDir("/var/lib/my-storage", "my storage");
 * if (warning) logger.warn(warning);
 * ```
 */
export async function makePrivateDir(dir: string, who: string): Promise<string | undefined> {
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  const bits = (await stat(dir)).mode;
  const mode = bits & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  // Shared by design: closing it would take it from everyone else, and the data would not be safe in it.
  if (bits & 0o1000)
    throw new Error(
      `${who}: ${dir} is a folder shared with other users (mode ${(bits & 0o7777).toString(8)}); give it a folder of its own`,
    );
  await chmod(dir, mode & 0o700);
  return created === undefined
    ? `${who}: ${dir} was readable by other users (mode ${mode.toString(8)}); changed it to ${(mode & 0o700).toString(8)}`
    : undefined;
}
