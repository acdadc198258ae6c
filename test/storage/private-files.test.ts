// Every file that holds messages, media or users is the owner's only, whatever the umask: run
// with umask 000, where anything not explicitly private would come out world-readable.
import { chmod, mkdir, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { UserStore } from "chat-gateway/login";
import { fsMediaStore } from "chat-gateway/media/fs";
import { makePrivateDir } from "chat-gateway/storage";
import { openStorage, removeTempDirs, tempDir, write } from "./sqljs-helpers.js";

let umask: number;
beforeAll(() => {
  umask = process.umask(0);
});
afterAll(() => {
  process.umask(umask);
});
afterEach(removeTempDirs);

/**
 * `path mode` for the folder and everything under it. A live storage may remove a file between the
 * listing and its stat (a journal a snapshot made obsolete): such a file is left out.
 */
async function modes(root: string): Promise<string[]> {
  const out = [`. ${((await stat(root)).mode & 0o777).toString(8)}`];
  for (const name of (await readdir(root, { recursive: true })).sort()) {
    const info = await stat(join(root, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (info) out.push(`${name} ${(info.mode & 0o777).toString(8)}`);
  }
  return out;
}

/** Only the root folder is a folder in these trees; everything else is a file. */
function expectPrivate(lines: string[]): void {
  expect(lines).toEqual(lines.map((line) => line.replace(/ \d+$/, line.startsWith(". ") ? " 700" : " 600")));
}

describe("private files", () => {
  test("modes - the sql.js folder, its lock, journals and snapshots are 0700/0600 under umask 000", async () => {
    const dir = join(await tempDir(), "data", "db");
    // Tiny snapshot bounds: every write is followed by a snapshot from the worker thread.
    const { storage } = await openStorage(dir, { snapshotMinBytes: 1, snapshotMaxBytes: 1 });
    await storage.commit("alice", write("m0"));
    await new Promise((r) => setTimeout(r, 300));
    await storage.commit("alice", write("m1"));
    // The snapshot is written by the worker after the commit: wait for it (by outcome, not a fixed time).
    let open = await modes(dir);
    for (let i = 0; i < 200 && !open.some((l) => /^snapshot-\d+\.db /.test(l)); i++) {
      await new Promise((r) => setTimeout(r, 50));
      open = await modes(dir);
    }
    expect(open.some((l) => l.startsWith("LOCK "))).toBe(true);
    expect(open.some((l) => /^journal-\d+\.log /.test(l))).toBe(true);
    expect(open.some((l) => /^snapshot-\d+\.db /.test(l))).toBe(true);
    expectPrivate(open);
    await storage.close();
    expectPrivate(await modes(dir));
    // The parent created along with it is private too.
    expect((await stat(join(dir, "..")).then((s) => s.mode & 0o777)).toString(8)).toBe("700");
  });

  test("modes - an existing folder and files open to others are tightened at open, with a warning", async () => {
    const dir = await tempDir();
    await chmod(dir, 0o755);
    await writeFile(join(dir, "journal-00000001.log"), "", { mode: 0o644 });
    const { storage, warnings } = await openStorage(dir);
    expect(warnings).toEqual([`sql.js storage: ${dir} was readable by other users (mode 755); changed it to 700`]);
    await storage.commit("alice", write("m0"));
    expectPrivate(await modes(dir));
    await storage.close();
  });

  test("modes - media files and their folder are 0700/0600 under umask 000, also an existing loose folder", async () => {
    const root = await tempDir();
    const media = fsMediaStore({ dir: join(root, "media") });
    const writer = await media.createWriter("alice", "m1");
    await writer.write(Uint8Array.of(1, 2, 3));
    expectPrivate(await modes(join(root, "media")));
    await writer.commit();
    const after = await modes(join(root, "media"));
    expect(after).toHaveLength(2);
    expectPrivate(after);

    await mkdir(join(root, "loose"), { mode: 0o777 });
    const loose = await fsMediaStore({ dir: join(root, "loose") }).createWriter("alice", "m2");
    await loose.commit();
    expectPrivate(await modes(join(root, "loose")));
  });

  test("modes - prepare() tightens an existing loose media folder before any upload, warning with its old mode; a shared sticky folder is refused as it is", async () => {
    const root = await tempDir();
    const dir = join(root, "media");
    await mkdir(dir, { mode: 0o777 });
    const warnings: string[] = [];
    const logger = { info: () => undefined, warn: (m: string) => warnings.push(m), error: () => undefined };
    await fsMediaStore({ dir, logger }).prepare();
    expect(warnings).toEqual([`media store: ${dir} was readable by other users (mode 777); changed it to 700`]);
    expectPrivate(await modes(dir));

    const shared = join(root, "shared");
    await mkdir(shared);
    await chmod(shared, 0o1777);
    await expect(makePrivateDir(shared, "example server")).rejects.toThrow(
      `example server: ${shared} is a folder shared with other users (mode 1777); give it a folder of its own`,
    );
    expect(((await stat(shared)).mode & 0o7777).toString(8)).toBe("1777");
  });

  test("modes - the users file and its new folder are 0600/0700 under umask 000", async () => {
    const root = await tempDir();
    await new UserStore(join(root, "conf", "users.json")).write(new Map([["alice", `$2b$10$${"a".repeat(53)}`]]));
    expectPrivate(await modes(join(root, "conf")));
  });
});
