import { mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fsMediaStore } from "chat-gateway/media/fs";
import { describeMediaStoreConformance } from "chat-gateway/testing";

const roots: string[] = [];
async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "chat-gateway-media-"));
  roots.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(roots.map((dir) => rm(dir, { recursive: true, force: true })));
});

describeMediaStoreConformance("fs", async () => fsMediaStore({ dir: await freshDir() }));

describe("fsMediaStore", () => {
  it("files - an upload lives in one temporary file in the folder until commit renames it", async () => {
    const dir = await freshDir();
    const store = fsMediaStore({ dir: join(dir, "media") });
    const writer = await store.createWriter("alice", "../../escape");
    await writer.write(Uint8Array.of(1, 2, 3));
    const during = await readdir(join(dir, "media"));
    expect(during).toHaveLength(1);
    expect(during[0]).toMatch(/^[0-9a-f]{64}\.[0-9a-f-]{36}\.tmp$/);
    await writer.commit();
    const after = await readdir(join(dir, "media"));
    expect(after).toEqual([during[0].slice(0, 64)]);
    expect(await readdir(dir)).toEqual(["media"]);
  });

  it("files - abort and delete leave the folder empty", async () => {
    const dir = await freshDir();
    const store = fsMediaStore({ dir });
    const aborted = await store.createWriter("alice", "a");
    await aborted.write(new Uint8Array(100_000));
    await aborted.abort();
    const kept = await store.createWriter("alice", "b");
    await kept.write(Uint8Array.of(1));
    await kept.commit();
    await store.delete("alice", ["b"]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("files - temporary files a crash left behind are removed once a day old", async () => {
    const dir = await freshDir();
    const stale = join(dir, `${"a".repeat(64)}.00000000-0000-0000-0000-000000000000.tmp`);
    const fresh = join(dir, `${"b".repeat(64)}.00000000-0000-0000-0000-000000000001.tmp`);
    await writeFile(stale, "x");
    await writeFile(fresh, "y");
    const old = new Date(Date.now() - 25 * 60 * 60 * 1000);
    await utimes(stale, old, old);
    const writer = await fsMediaStore({ dir }).createWriter("alice", "m");
    await writer.abort();
    expect(await readdir(dir)).toEqual([fresh.slice(dir.length + 1)]);
  });

  it("read - an item deleted while being read is still read to its end", async () => {
    const dir = await freshDir();
    const store = fsMediaStore({ dir });
    const writer = await store.createWriter("alice", "m");
    await writer.write(new Uint8Array(1_000_000).fill(5));
    await writer.commit();
    let total = 0;
    for await (const chunk of store.read("alice", "m")) {
      if (total === 0) await store.delete("alice", ["m"]);
      total += chunk.byteLength;
    }
    expect(total).toBe(1_000_000);
    expect(await readdir(dir)).toEqual([]);
  });

  it("options - a missing folder path is a TypeError", () => {
    expect(() => fsMediaStore({ dir: "" })).toThrow(TypeError);
    expect(() => fsMediaStore({} as { dir: string })).toThrow(/`dir`/);
  });
});
