import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decodeChunk, encodeChunk } from "chat-gateway/protocol";
import type { RuntimeEvent } from "chat-gateway";
import { fsMediaStore } from "chat-gateway/media/fs";
import { Client, startGateway, type Harness } from "./harness.js";
import { sendAndSettle, sha, upload } from "./media-helpers.js";
import { scriptedRuntime, sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function pull(c: Client, id: string): Promise<{ end: any; bytes: Buffer }> {
  const from = c.binary.length;
  const end = await c.request("media.pull", { media_id: id });
  const chunks = c.binary.slice(from).map((b) => decodeChunk(new Uint8Array(b)));
  for (const [i, ch] of chunks.entries()) {
    expect(ch.media).toBe(id);
    expect(ch.bytes.byteLength).toBeLessThanOrEqual(256 * 1024);
    if (i > 0) expect(ch.offset).toBe(chunks[i - 1].offset + chunks[i - 1].bytes.byteLength);
  }
  return { end, bytes: Buffer.concat(chunks.map((ch) => Buffer.from(ch.bytes))) };
}

describe("media", () => {
  it("media - upload in chunks, ack, send with media_refs, history carries media, pull returns the same bytes", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const bytes = randomBytes(700_000);
    const ack = await upload(a, "ref-1", bytes, { chunk: 100_000 });
    expect(ack).toMatchObject({ type: "media.upload.ack", payload: { ok: true, media_ref: "ref-1" } });
    const { echo } = await a.say({ chat_id: "default", text: "look", media_refs: ["ref-1"] });
    expect(echo.payload.media).toEqual([
      { media_id: "ref-1", kind: "image", mime: "image/png", size: 700_000, filename: "ref-1.png" },
    ]);
    const item = (await a.request("history", { chat_id: "default" })).payload.messages[0];
    expect(item.media[0].media_id).toBe("ref-1");
    const b = await Client.connect(h.url);
    const got = await pull(b, "ref-1");
    expect(got.end).toMatchObject({ type: "media.pull.end", payload: { ok: true, media_id: "ref-1" } });
    expect(sha(got.bytes)).toBe(sha(bytes));
  });

  it("media - media only: empty text with media_refs is a message", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    await upload(a, "only", randomBytes(10));
    const echo = await a.request("message.send", { chat_id: "default", text: "", media_refs: ["only"] });
    expect(echo.payload).toMatchObject({ role: "user", text: "", media: [{ media_id: "only" }] });
  });

  it("media - a wrong sha256 or a short upload is ack ok false and nothing is kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), "media-"));
    h = await startGateway({ mediaStore: fsMediaStore({ dir }) });
    const a = await Client.connect(h.url);
    const bad = await upload(a, "bad-hash", randomBytes(1000), { hash: "0".repeat(64) });
    expect(bad.payload).toEqual({ ok: false, media_ref: "bad-hash" });
    const short = await upload(a, "short", randomBytes(1000), { size: 2000 });
    expect(short.payload).toEqual({ ok: false, media_ref: "short" });
    expect(
      (await a.request("message.send", { chat_id: "default", text: "x", media_refs: ["bad-hash"] })).payload.code,
    ).toBe("not_found");
    expect((await a.request("media.pull", { media_id: "short" })).payload.code).toBe("not_found");
    expect(readdirSync(dir)).toEqual([]);
    // the same ref can be uploaded again after a failure
    expect((await upload(a, "bad-hash", Buffer.from("ok"))).payload.ok).toBe(true);
  });

  it("media - a declared size over the limit is media_too_large at once; bytes beyond the declared size drop the upload", async () => {
    const dir = mkdtempSync(join(tmpdir(), "media-"));
    h = await startGateway({ maxMediaBytes: 5000, mediaStore: fsMediaStore({ dir }) });
    const a = await Client.connect(h.url);
    const big = await sendAndSettle(a, "media.upload.start", {
      media_ref: "big",
      kind: "video",
      mime: "video/mp4",
      size: 5001,
      filename: "v.mp4",
    });
    expect(big?.payload.code).toBe("media_too_large");
    await sendAndSettle(a, "media.upload.start", {
      media_ref: "liar",
      kind: "document",
      mime: "text/plain",
      size: 10,
      filename: "a.txt",
    });
    a.raw(Buffer.from(encodeChunk("liar", 0, randomBytes(11))));
    const err = await a.waitFor(
      (f) => f.type === "error" && f.payload.code === "media_too_large" && f.payload.message.includes("liar"),
    );
    expect(err.payload.message).toContain("liar");
    expect((await a.request("media.upload.end", { media_ref: "liar", sha256: "x" })).payload.code).toBe("not_found");
    expect(readdirSync(dir)).toEqual([]);
  });

  it("media - a chunk over 256 KiB is media_too_large naming the ref, the upload is dropped, and a retry in chunks works", async () => {
    const dir = mkdtempSync(join(tmpdir(), "media-"));
    h = await startGateway({ mediaStore: fsMediaStore({ dir }) });
    const a = await Client.connect(h.url);
    const bytes = randomBytes(256 * 1024 + 1);
    await sendAndSettle(a, "media.upload.start", {
      media_ref: "fat",
      kind: "image",
      mime: "image/png",
      size: bytes.length,
      filename: "fat.png",
    });
    a.raw(Buffer.from(encodeChunk("fat", 0, bytes)));
    const err = await a.waitFor((f) => f.type === "error" && f.payload.code === "media_too_large");
    expect(err.payload.message).toContain('"fat"');
    expect((await a.request("media.upload.end", { media_ref: "fat", sha256: sha(bytes) })).payload.code).toBe(
      "not_found",
    );
    expect(readdirSync(dir)).toEqual([]);
    // The ref is free again, and the same bytes in protocol-sized chunks go through.
    expect(await upload(a, "fat", bytes)).toMatchObject({
      type: "media.upload.ack",
      payload: { ok: true, media_ref: "fat" },
    });
  });

  it("media - a ref in flight or already uploaded is unsupported; more uploads than allowed in flight is rate_limited", async () => {
    h = await startGateway({ maxUploadsPerConnection: 2 });
    const a = await Client.connect(h.url);
    await upload(a, "done", Buffer.from("x"));
    const start = (ref: string) =>
      sendAndSettle(a, "media.upload.start", {
        media_ref: ref,
        kind: "image",
        mime: "image/png",
        size: 4,
        filename: "f",
      });
    expect((await start("done"))?.payload.code).toBe("unsupported");
    expect(await start("p1")).toBeUndefined();
    expect((await start("p1"))?.payload.code).toBe("unsupported");
    expect(await start("p2")).toBeUndefined();
    expect((await start("p3"))?.payload.code).toBe("rate_limited");
  });

  // Each mime as sent in media.upload.start, and whether the upload may start.
  const mimes: Array<[string, boolean]> = [
    ["image/png", true],
    ["audio/webm;codecs=opus", true],
    ['text/plain; charset="utf-8"', true],
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", true],
    ["image/svg+xml", true],
    ["", false],
    ["image", false],
    ["image/", false],
    ["/png", false],
    ["image/png\r\nSet-Cookie: a=b", false],
    ["image/png\nx", false],
    ["text/html\u0000", false],
    ["image/png; ", false],
    ["image/png;charset", false],
    ['image/png; a=b; c="d\r\n"', false],
    ["image /png", false],
    ["image/png, text/html", false],
    [`image/${"x".repeat(128)}`, false],
    [`image/${"x".repeat(127)}`, true],
    [`application/x${"; a=b".repeat(50)}`, false],
  ];
  for (const [mime, ok] of mimes) {
    it(`media - mime ${JSON.stringify(mime)} is ${ok ? "accepted" : "unsupported, with the request id, and nothing is stored"}`, async () => {
      h = await startGateway();
      const a = await Client.connect(h.url);
      const ref = `m-${Math.random().toString(36).slice(2)}`;
      const from = a.frames.length;
      a.send("media.upload.start", { media_ref: ref, kind: "image", mime, size: 1, filename: "f" }, `start-${ref}`);
      await a.request("ping", {});
      const error = a.frames.slice(from).find((f) => f.type === "error");
      if (ok) {
        expect(error).toBeUndefined();
        a.raw(Buffer.from(encodeChunk(ref, 0, Buffer.from("x"))));
        expect(
          (await a.request("media.upload.end", { media_ref: ref, sha256: sha(Buffer.from("x")) })).payload.ok,
        ).toBe(true);
      } else {
        expect(error).toMatchObject({ id: `start-${ref}`, payload: { code: "unsupported" } });
        // U+0000 is refused for every string of a frame before the mime rule is reached.
        expect(error!.payload.message).toMatch(
          /^field "mime": must be a media type "type\/subtype"|must not contain U\+0000/,
        );
        expect((await a.request("media.upload.end", { media_ref: ref, sha256: "x" })).payload.code).toBe("not_found");
      }
    });
  }

  it("media - several uploads in flight on one connection interleave", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const x = randomBytes(300_000);
    const y = randomBytes(200_000);
    for (const [ref, b] of [
      ["x", x],
      ["y", y],
    ] as const)
      await sendAndSettle(a, "media.upload.start", {
        media_ref: ref,
        kind: "document",
        mime: "application/octet-stream",
        size: b.length,
        filename: ref,
      });
    for (let at = 0; at < 300_000; at += 50_000) {
      a.raw(Buffer.from(encodeChunk("x", at, x.subarray(at, at + 50_000))));
      if (at < 200_000) a.raw(Buffer.from(encodeChunk("y", at, y.subarray(at, at + 50_000))));
    }
    expect((await a.request("media.upload.end", { media_ref: "y", sha256: sha(y) })).payload.ok).toBe(true);
    expect((await a.request("media.upload.end", { media_ref: "x", sha256: sha(x) })).payload.ok).toBe(true);
  });

  it("media - an upload abandoned by a closed socket leaves nothing behind", async () => {
    const dir = mkdtempSync(join(tmpdir(), "media-"));
    h = await startGateway({ mediaStore: fsMediaStore({ dir }) });
    const a = await Client.connect(h.url);
    await sendAndSettle(a, "media.upload.start", {
      media_ref: "gone",
      kind: "audio",
      mime: "audio/ogg",
      size: 100_000,
      filename: "a.ogg",
    });
    a.raw(Buffer.from(encodeChunk("gone", 0, randomBytes(50_000))));
    await a.request("ping", {});
    expect(readdirSync(dir).length).toBe(1);
    await a.close();
    await sleep(100);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("media - another owner's media is not_found, and a device without caps.media gets unsupported", async () => {
    const { tokenAuthenticator } = await import("chat-gateway");
    h = await startGateway({ authenticator: tokenAuthenticator({ a: "ann", b: "bob" }) });
    const ann = await Client.connect(h.url, { token: "a" });
    await upload(ann, "mine", Buffer.from("secret"));
    const bob = await Client.connect(h.url, { token: "b" });
    expect((await bob.request("media.pull", { media_id: "mine" })).payload.code).toBe("not_found");
    expect(
      (await bob.request("message.send", { chat_id: "default", text: "x", media_refs: ["mine"] })).payload.code,
    ).toBe("not_found");
    const noMedia = await Client.connect(h.url, { token: "a", caps: { media: false } });
    expect((await noMedia.request("media.pull", { media_id: "mine" })).payload.code).toBe("unsupported");
  });

  it("media - an assistant message with media sends media.offer with message_id, stored, and not to devices without caps.media", async () => {
    const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
    h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "here is a picture" } as RuntimeEvent;
        yield { type: "media", kind: "image", mime: "image/png", filename: "chart.png", data: png } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    const blind = await Client.connect(h.url, { caps: { media: false } });
    const { final } = await a.say({ chat_id: "default", text: "draw" });
    const offer = await a.waitFor((f) => f.type === "media.offer");
    expect(offer.seq).toBe(final.seq! + 1);
    expect(offer.payload).toMatchObject({
      kind: "image",
      mime: "image/png",
      filename: "chart.png",
      size: png.length,
      message_id: final.payload.message_id,
      chat_id: "default",
    });
    expect(final.payload.media[0].media_id).toBe(offer.payload.media_id);
    const got = await pull(a, offer.payload.media_id);
    expect(got.bytes.equals(png)).toBe(true);
    await blind.waitFor((f) => f.type === "message.stop");
    await blind.request("ping", {});
    expect(blind.of("media.offer")).toEqual([]);
    const replay = await Client.connect(h.url);
    await replay.request("sync", { cursor: 0 });
    expect(replay.of("media.offer")).toHaveLength(1);
  });

  it("media - an upload goes with one message: a second attachment is unsupported, and deleting the message takes the media", async () => {
    const dir = mkdtempSync(join(tmpdir(), "media-"));
    h = await startGateway({ mediaStore: fsMediaStore({ dir }) });
    const a = await Client.connect(h.url);
    const bytes = randomBytes(2000);
    await upload(a, "photo", bytes);
    const { echo: first } = await a.say({ chat_id: "default", text: "first", media_refs: ["photo"] });
    const again = await a.request("message.send", { chat_id: "default", text: "second", media_refs: ["photo"] });
    expect(again.type).toBe("error");
    expect(again.payload.code).toBe("unsupported");
    expect(again.payload.message).toContain("upload the file again");
    expect((await a.request("history", { chat_id: "default" })).payload.messages.map((m: any) => m.text)).not.toContain(
      "second",
    );
    // The holder keeps its media until it is deleted; then the bytes go with it.
    expect(sha((await pull(a, "photo")).bytes)).toBe(sha(bytes));
    await a.request("message.delete", { chat_id: "default", message_ids: [first.payload.message_id] });
    expect((await a.request("media.pull", { media_id: "photo" })).payload.code).toBe("not_found");
    await sleep(50);
    expect(readdirSync(dir)).toEqual([]);
    // A file re-sent is a new upload, with a media_ref of its own.
    await upload(a, "photo-again", bytes);
    const { echo } = await a.say({ chat_id: "default", text: "re-sent", media_refs: ["photo-again"] });
    expect(echo.payload.media[0].media_id).toBe("photo-again");
  });

  it("media - an assistant's media id, or one ref twice, is refused as media_refs and the assistant keeps its media", async () => {
    const png = Buffer.from("89504e470d0a1a0a", "hex");
    h = await startGateway({
      runtime: scriptedRuntime(async function* () {
        yield { type: "media", kind: "image", mime: "image/png", filename: "chart.png", data: png } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    await a.say({ chat_id: "default", text: "draw" });
    const offer = await a.waitFor((f) => f.type === "media.offer");
    const reuse = await a.request("message.send", {
      chat_id: "default",
      text: "look at this",
      media_refs: [offer.payload.media_id],
    });
    expect(reuse.payload.code).toBe("unsupported");
    await upload(a, "twice", Buffer.from("x"));
    expect(
      (await a.request("message.send", { chat_id: "default", text: "x", media_refs: ["twice", "twice"] })).payload.code,
    ).toBe("unsupported");
    expect((await pull(a, offer.payload.media_id)).bytes.equals(png)).toBe(true);
  });

  it("media - a broken binary frame is unsupported and the connection goes on", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    a.raw(Buffer.from([0, 0, 0, 200, 1, 2]));
    a.raw(Buffer.from([0, 0, 0, 2, 0x7b, 0x7d]));
    await a.request("ping", {});
    expect(a.of("error").map((e) => e.payload.code)).toEqual(["unsupported", "unsupported"]);
    a.raw(Buffer.from(encodeChunk("nobody", 0, Buffer.from("x"))));
    expect((await a.waitFor((f) => f.type === "error" && f.payload.code === "not_found")).payload.message).toContain(
      "nobody",
    );
  });
});
