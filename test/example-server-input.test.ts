// The example server's HTTP routes with malformed input, in-process: a bad percent-escape is a 404
// (not a 500), a media's client-given mime type reaches Content-Type only when it is one, and an
// odd filename cannot break the response.
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { encodeChunk } from "chat-gateway/protocol";
import { Client } from "./gateway/harness.js";
import { startExample, tempDir, wsUrl } from "./client/helpers.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function upload(c: Client, ref: string, mime: string, bytes: Buffer, filename = "f.bin") {
  c.send("media.upload.start", { media_ref: ref, kind: "document", mime, size: bytes.length, filename }, `${ref}-s`);
  c.raw(Buffer.from(encodeChunk(ref, 0, bytes)));
  return c.request("media.upload.end", { media_ref: ref, sha256: createHash("sha256").update(bytes).digest("hex") });
}

describe("example server input", () => {
  it("example server input - malformed escapes are 404, a mime with control characters is refused at upload, one that is no mime type is refused too, a lone surrogate in a filename is refused", async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const server = await startExample(dir);
    cleanups.push(() => server.close());
    const c = await Client.connect(wsUrl(server));
    cleanups.push(() => c.close());

    for (const path of ["/api/media/%zz", "/%zz", "/%E0%A4%A"]) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status, path).toBe(404);
    }

    const refused = await upload(c, "r1", "text/html\r\nSet-Cookie: a=b", Buffer.from("abc"));
    expect(refused).toMatchObject({ type: "error", payload: { code: "not_found" } });
    expect(c.frames.find((f) => f.id === "r1-s")).toMatchObject({
      type: "error",
      payload: { code: "unsupported", message: expect.stringContaining('"mime"') },
    });

    // A mime that is no media type never gets stored, so it can never reach a Content-Type header.
    expect(await upload(c, "r2", "not a mime type", Buffer.from("abc"))).toMatchObject({
      type: "error",
      payload: { code: "not_found" },
    });
    expect(c.frames.find((f) => f.id === "r2-s")).toMatchObject({
      type: "error",
      payload: { code: "unsupported", message: expect.stringContaining('"mime"') },
    });

    // Parameters are stored as sent and left out of the served type.
    expect(await upload(c, "r3", "text/plain; charset=utf-8", Buffer.from("xyz"))).toMatchObject({
      type: "media.upload.ack",
      payload: { ok: true },
    });
    expect((await fetch(`${server.url}/api/media/r3`)).headers.get("content-type")).toBe("text/plain");

    // A lone surrogate is no text any storage can keep: refused at the frame (docs/PROTOCOL.md §1).
    await upload(c, "r4", "text/plain", Buffer.from("lone"), "a\ud800b.txt");
    expect(c.frames.find((f) => f.id === "r4-s")).toMatchObject({ type: "error", payload: { code: "unsupported" } });
    expect((await fetch(`${server.url}/api/media/r4`)).status).toBe(404);
  });
});
