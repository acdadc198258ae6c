// GET /api/media/<id> through createMediaHandler on a real node:http server, with media uploaded
// over a real WebSocket: what a browser gets for each type, file name and malformed id.
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type MediaStore } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { encodeChunk } from "chat-gateway/protocol";
import { createMediaHandler } from "chat-gateway/media/http";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { request } from "./helpers.js";

let h: Harness | undefined;
let web: http.Server | undefined;
afterEach(async () => {
  web?.closeAllConnections();
  await new Promise((r) => (web ? web.close(r) : r(undefined)));
  await h?.close();
  h = web = undefined;
});

/** The gateway, a device on it, and an HTTP server with the media route, all on 127.0.0.1. */
async function setup() {
  h = await startGateway();
  const storage = h.gateway.options.storage as Storage;
  const mediaStore = h.gateway.options.mediaStore as MediaStore;
  const errors: unknown[] = [];
  // The owner comes from a header here; an application passes protection.userOf(req).
  const media = createMediaHandler({
    storage,
    mediaStore,
    ownerOf: (req) => (req.headers["x-user"] as string | undefined) ?? ANONYMOUS_OWNER,
    onError: (e) => errors.push(e),
  });
  web = http.createServer((req, res) => {
    void media(req, res).then((handled) => handled || res.writeHead(418).end());
  });
  await new Promise<void>((r) => web!.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  const device = await Client.connect(h.url);
  async function upload(ref: string, mime: string, filename: string, bytes: Buffer, kind = "image") {
    device.send("media.upload.start", { media_ref: ref, kind, mime, size: bytes.length, filename });
    device.raw(Buffer.from(encodeChunk(ref, 0, bytes)));
    const ack = await device.request("media.upload.end", {
      media_ref: ref,
      sha256: createHash("sha256").update(bytes).digest("hex"),
    });
    expect(ack.payload).toEqual({ ok: true, media_ref: ref });
  }
  return { base, storage, mediaStore, upload, errors };
}

const SAFE = { "x-content-type-options": "nosniff", "content-security-policy": "default-src 'none'; sandbox" };

describe("media route", () => {
  // [mime as uploaded, content-type served, disposition]
  const cases: Array<[string, string, "inline" | "attachment"]> = [
    ["image/png", "image/png", "inline"],
    ["IMAGE/JPEG", "image/jpeg", "inline"],
    ["image/gif", "image/gif", "inline"],
    ["image/webp", "image/webp", "inline"],
    ["image/avif", "image/avif", "inline"],
    ["audio/webm;codecs=opus", "audio/webm", "inline"],
    ["video/mp4", "video/mp4", "inline"],
    ["image/svg+xml", "image/svg+xml", "attachment"],
    ["text/html", "text/html", "attachment"],
    ['text/html; charset="utf-8"', "text/html", "attachment"],
    ["application/xhtml+xml", "application/xhtml+xml", "attachment"],
    ["text/xml", "text/xml", "attachment"],
    ["application/pdf", "application/pdf", "attachment"],
    ["text/plain", "text/plain", "attachment"],
    ["application/octet-stream", "application/octet-stream", "attachment"],
  ];
  for (const [mime, type, disposition] of cases) {
    it(`media route - ${mime} is served as ${type}, ${disposition}, nosniff, sandboxed`, async () => {
      const { base, upload } = await setup();
      const bytes = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.cookie)"/>`);
      await upload("m1", mime, "pic.x", bytes);
      const reply = await request(base, { path: "/api/media/m1" });
      expect(reply.status).toBe(200);
      expect(reply.text).toBe(bytes.toString());
      expect(reply.headers).toMatchObject({
        ...SAFE,
        "content-type": type,
        "content-length": String(bytes.length),
        "content-disposition": `${disposition}; filename="pic.x"; filename*=UTF-8''pic.x`,
      });
    });
  }

  it("media route - file names cannot break the header: quotes, CR/LF, slashes, non-ASCII", async () => {
    const { base, upload } = await setup();
    await upload(
      "n1",
      "application/pdf",
      "a\"b\\c/d\r\nSet-Cookie: x=1; évé €(1)*'.pdf",
      Buffer.from("%PDF"),
      "document",
    );
    const reply = await request(base, { path: "/api/media/n1" });
    expect(reply.headers["set-cookie"]).toBeUndefined();
    expect(reply.headers["content-disposition"]).toBe(
      `attachment; filename="a_b_c_d__Set-Cookie: x=1; _v_ _(1)*'.pdf"; ` +
        `filename*=UTF-8''a%22b%5Cc%2Fd%0D%0ASet-Cookie%3A%20x%3D1%3B%20%C3%A9v%C3%A9%20%E2%82%AC%281%29%2A%27.pdf`,
    );
    await upload("n2", "image/png", "", Buffer.from("x"));
    expect((await request(base, { path: "/api/media/n2" })).headers["content-disposition"]).toBe(
      `inline; filename="media"; filename*=UTF-8''media`,
    );
  });

  it("media route - malformed, unknown, nested, over-long and another owner's ids are 404; other methods 405; HEAD has no body", async () => {
    const { base, upload, storage, errors } = await setup();
    await upload("mine", "image/png", "a.png", Buffer.from("png"));
    await upload("50%", "image/png", "b.png", Buffer.from("pct"));
    for (const path of [
      "/api/media/%ZZ",
      "/api/media/%E0%A4%A",
      "/api/media/unknown",
      "/api/media/mine/x",
      "/api/media/",
      `/api/media/${"a".repeat(1025)}`,
    ]) {
      const reply = await request(base, { path });
      expect({ path, status: reply.status, body: reply.body }).toEqual({
        path,
        status: 404,
        body: { error: "not found" },
      });
      expect(reply.headers["x-content-type-options"]).toBe("nosniff");
    }
    expect((await request(base, { path: "/api/media/50%25" })).text).toBe("pct");
    expect((await request(base, { path: "/api/media/mine?download=1" })).text).toBe("png");
    // Bob's id exists, but not for the anonymous owner; and Bob sees his own only.
    await storage.putMedia("bob", {
      media_id: "bobs",
      kind: "image",
      mime: "image/png",
      size: 1,
      filename: "b",
      owner: "bob",
      sha256: "",
      created_ts: 1,
    });
    expect((await request(base, { path: "/api/media/bobs" })).status).toBe(404);
    expect((await request(base, { path: "/api/media/mine", headers: { "x-user": "bob" } })).status).toBe(404);
    const post = await request(base, { method: "POST", path: "/api/media/mine" });
    expect([post.status, post.headers.allow]).toEqual([405, "GET, HEAD"]);
    const head = await request(base, { method: "HEAD", path: "/api/media/mine" });
    expect([head.status, head.text, head.headers["content-length"], head.headers["content-type"]]).toEqual([
      200,
      "",
      "3",
      "image/png",
    ]);
    expect((await request(base, { path: "/elsewhere" })).status).toBe(418);
    // A record whose bytes are gone (bob's) is a 404 too, not a 500.
    expect((await request(base, { path: "/api/media/bobs", headers: { "x-user": "bob" } })).status).toBe(404);
    expect(errors).toEqual([]);
  });

  it("media route - a record stored with a malformed type (before uploads were checked) is served as an octet-stream download", async () => {
    const { base, storage, mediaStore } = await setup();
    const writer = await mediaStore.createWriter(ANONYMOUS_OWNER, "old");
    await writer.write(Buffer.from("<script>alert(1)</script>"));
    await writer.commit();
    await storage.putMedia(ANONYMOUS_OWNER, {
      media_id: "old",
      kind: "image",
      mime: "text/html\r\nX-Evil: 1",
      size: 25,
      filename: "o.html",
      owner: ANONYMOUS_OWNER,
      sha256: "",
      created_ts: 1,
    });
    const reply = await request(base, { path: "/api/media/old" });
    expect(reply.status).toBe(200);
    expect(reply.headers["x-evil"]).toBeUndefined();
    expect(reply.headers).toMatchObject({
      ...SAFE,
      "content-type": "application/octet-stream",
      "content-disposition": `attachment; filename="o.html"; filename*=UTF-8''o.html`,
    });
  });

  it("media route - with login off other sites cannot embed or fetch media: same-origin CORP, 403 to Sec-Fetch-Site cross-site", async () => {
    const { base, upload, storage, mediaStore } = await setup();
    await upload("pic", "image/png", "p.png", Buffer.from("png"));
    for (const site of ["same-origin", "same-site", "none", undefined]) {
      const reply = await request(base, { path: "/api/media/pic", headers: site ? { "sec-fetch-site": site } : {} });
      expect([site, reply.status, reply.text, reply.headers["cross-origin-resource-policy"]]).toEqual([
        site,
        200,
        "png",
        "same-origin",
      ]);
    }
    const embedded = await request(base, {
      path: "/api/media/pic",
      headers: { "sec-fetch-site": "cross-site", "sec-fetch-dest": "image" },
    });
    expect([embedded.status, embedded.body, embedded.headers["cross-origin-resource-policy"]]).toEqual([
      403,
      { error: "cross-site request refused" },
      "same-origin",
    ]);
    // A signed-in owner's media are guarded by the credential, so the app decides who embeds them.
    const writer = await mediaStore.createWriter("bob", "bobs");
    await writer.write(Buffer.from("b"));
    await writer.commit();
    await storage.putMedia("bob", {
      media_id: "bobs",
      kind: "image",
      mime: "image/png",
      size: 1,
      filename: "b",
      owner: "bob",
      sha256: "",
      created_ts: 1,
    });
    const bobs = await request(base, {
      path: "/api/media/bobs",
      headers: { "x-user": "bob", "sec-fetch-site": "cross-site" },
    });
    expect([bobs.status, bobs.headers["cross-origin-resource-policy"]]).toEqual([200, undefined]);
  });

  it("media route - misconfiguration throws TypeError", () => {
    expect(() => createMediaHandler({} as never)).toThrow(TypeError);
    expect(() =>
      createMediaHandler({
        storage: {} as Storage,
        mediaStore: {} as MediaStore,
        ownerOf: () => null,
        prefix: "/media",
      }),
    ).toThrow(TypeError);
  });
});
