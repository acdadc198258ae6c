// A full disk under a running gateway: a real tmpfs of a few MiB mounted for the test, a real
// sql.js folder on it, real WebSocket clients. Writes fail with a clear error while it is full;
// once space is freed, hellos and sends work again without a restart, and nothing acknowledged
// is lost.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, rmdirSync, writeSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encodeChunk } from "chat-gateway/protocol";
import { fsMediaStore } from "chat-gateway/media/fs";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { message as storedMessage } from "./sqljs-helpers.js";

/** Mounts a tmpfs of `size`; undefined where mounting is not permitted (not root). */
function mountTmpfs(size: string): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), "cg-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir], { stdio: "pipe" });
    return dir;
  } catch {
    rmdirSync(dir);
    return undefined;
  }
}

const probe = mountTmpfs("64k");
if (probe) execFileSync("umount", [probe]);
const canMount = probe !== undefined;

let mounted: string | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (mounted) execFileSync("umount", ["-l", mounted]);
  mounted = undefined;
});

/** Fills the file system to the last byte; returns the filler's path. */
function fill(dir: string): string {
  const path = join(dir, "filler");
  const fd = openSync(path, "w");
  try {
    for (const size of [64 * 1024, 1024, 1]) {
      const chunk = Buffer.alloc(size, 1);
      for (;;) {
        try {
          if (writeSync(fd, chunk) < size) break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

const message = (id: string, text: string) => storedMessage(id, { text });
const quietLogger = { info() {}, warn() {}, error() {} };

describe.skipIf(!canMount)(
  `sql.js disk full (needs permission to mount a tmpfs${canMount ? "" : ": NOT PERMITTED HERE, skipped"})`,
  () => {
    it("disk full - writes and hellos fail with a clear error while full, work again once space is freed, acknowledged writes survive", {
      timeout: 60_000,
    }, async () => {
      mounted = mountTmpfs("4m")!;
      const dir = join(mounted, "db");
      const warnings: string[] = [];
      h = await startGateway({
        storage: sqlJsStorage({ dir, onWarning: (m) => warnings.push(m) }),
        mediaStore: fsMediaStore({ dir: join(mounted, "media") }),
        logger: quietLogger,
      });
      const a = await Client.connect(h.url);
      await a.say({ chat_id: "default", text: "before 1", client_msg_id: "b1" });
      await a.say({ chat_id: "default", text: "before 2", client_msg_id: "b2" });

      const filler = fill(mounted);
      // Larger than a page, so it cannot slip into the journal's last partly used page.
      const big = `lost ${"x".repeat(20_000)}`;
      const refused = await a.request("message.send", { chat_id: "default", text: big, client_msg_id: "full-1" });
      expect(refused).toMatchObject({
        type: "error",
        payload: { code: "internal", message: "the server's disk is full: the change was not saved; try again later" },
      });
      // An upload's bytes have nowhere to go either: the error names the cause and the upload is dropped.
      const photo = randomBytes(100_000);
      a.send("media.upload.start", {
        media_ref: "p-full",
        kind: "image",
        mime: "image/png",
        size: photo.length,
        filename: "p.png",
      });
      a.raw(Buffer.from(encodeChunk("p-full", 0, photo)));
      const mediaError = await a.waitFor((f) => f.type === "error" && f.payload.message.includes("media"));
      expect(mediaError.payload).toEqual({
        code: "internal",
        message: "the server's disk is full: the media was not saved; try again later",
      });
      // A new device's hello writes the device: refused with an error and a close, not a hang.
      const b = new Client(h.url);
      await b.opened;
      const hello = await b.request("hello", { token: "", device_id: "dev-full", device_name: "t" });
      expect(hello).toMatchObject({ type: "error", payload: { code: "internal" } });
      expect(await b.closedPromise).toBe(1011);

      rmSync(filler);
      // Writes are refused for a second after a failure; well within a few, they work again.
      const deadline = Date.now() + 5000;
      let c: Client | undefined;
      while (!c) {
        c = await Client.connect(h.url, { device_id: "dev-after" }).catch((error: unknown) => {
          if (Date.now() > deadline) throw error;
          return new Promise<undefined>((r) => setTimeout(() => r(undefined), 200));
        });
      }
      expect((await c.say({ chat_id: "default", text: "after 1", client_msg_id: "a1" })).echo.type).toBe("message");
      expect((await a.say({ chat_id: "default", text: "after 2", client_msg_id: "a2" })).echo.type).toBe("message");
      a.send("media.upload.start", {
        media_ref: "p-after",
        kind: "image",
        mime: "image/png",
        size: photo.length,
        filename: "p.png",
      });
      a.raw(Buffer.from(encodeChunk("p-after", 0, photo)));
      expect(
        (
          await a.request("media.upload.end", {
            media_ref: "p-after",
            sha256: createHash("sha256").update(photo).digest("hex"),
          })
        ).payload.ok,
      ).toBe(true);
      expect(warnings.some((w) => w.includes("a journal write failed") && w.includes("no space left"))).toBe(true);
      await h.close();

      // A fresh start on the same folder: every acknowledged message, and not the refused one.
      h = await startGateway({ storage: sqlJsStorage({ dir, onWarning: () => {} }), logger: quietLogger });
      const d = await Client.connect(h.url);
      const history = await d.request("history", { chat_id: "default", limit: 200 });
      const userTexts = history.payload.messages
        .filter((m: { role: string }) => m.role === "user")
        .map((m: { text: string }) => m.text);
      expect(userTexts).toEqual(["before 1", "before 2", "after 1", "after 2"]);
      expect(history.payload.messages.filter((m: { role: string }) => m.role === "assistant")).toHaveLength(4);
    });

    it("disk full - concurrent writes all fail, reads keep answering, a failed snapshot leaves no partial file, and the storage recovers in place", {
      timeout: 60_000,
    }, async () => {
      mounted = mountTmpfs("2m")!;
      const dir = join(mounted, "db");
      const warnings: string[] = [];
      // Snapshots only from the timer: one is attempted (and fails) once the disk is full, with
      // journal written since the last. (A snapshot due to a write is not attempted once that
      // write's journal record failed: the database is about to be reloaded.)
      const storage = sqlJsStorage({
        dir,
        snapshotIntervalMs: 2000,
        snapshotMinBytes: 1e9,
        snapshotMaxBytes: 1e9,
        onWarning: (m) => warnings.push(m),
      });
      await storage.open();
      const write = (id: string, text = id) => storage.commit("alice", { messages: [message(id, text)] });
      await write("m1");
      await write("m2");

      const filler = fill(mounted);
      await new Promise((r) => setTimeout(r, 2500));
      const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => write(`full-${i}`, "y".repeat(20_000))));
      for (const r of results) {
        expect(r).toMatchObject({
          status: "rejected",
          reason: {
            name: "GatewayError",
            code: "internal",
            message: "the server's disk is full: the change was not saved; try again later",
          },
        });
      }
      // Reads answer from what is on disk: none of the refused writes is visible.
      expect(
        (await storage.history("alice", { chat_id: "c1", thread_id: null, limit: 50 }))!.messages.map(
          (m) => m.message_id,
        ),
      ).toEqual(["m1", "m2"]);
      await expect(write("soon")).rejects.toMatchObject({ code: "internal" });
      expect((await readdir(dir)).filter((n) => n.endsWith(".tmp"))).toEqual([]);

      rmSync(filler);
      await new Promise((r) => setTimeout(r, 1100));
      await write("m3");
      await storage.close();
      expect(warnings.some((w) => w.startsWith("sql.js storage: a journal write failed (ENOSPC"))).toBe(true);
      expect(
        warnings.some((w) => w.startsWith("sql.js storage: snapshot failed, the journal keeps everything: ENOSPC")),
      ).toBe(true);

      const again = sqlJsStorage({ dir, onWarning: () => {} });
      await again.open();
      expect(
        (await again.history("alice", { chat_id: "c1", thread_id: null, limit: 50 }))!.messages.map(
          (m) => m.message_id,
        ),
      ).toEqual(["m1", "m2", "m3"]);
      await again.close();
    });
  },
);
