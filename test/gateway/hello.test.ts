import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { encodeChunk } from "chat-gateway/protocol";
import { ANONYMOUS_OWNER, tokenAuthenticator } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => h?.close());

async function rawClient(url: string): Promise<Client> {
  const c = new Client(url);
  await c.opened;
  return c;
}

describe("hello", () => {
  it("hello - a first frame that is not hello gets auth with its id and close 4401", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.send("channel.list", {}, "x1");
    expect(await c.closedPromise).toBe(4401);
    expect(c.frames).toEqual([
      { type: "error", id: "x1", payload: { code: "auth", message: expect.stringContaining("hello") } },
    ]);
  });

  it("hello - a first hello of the wrong shape gets auth with its request id, then 4401", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.send("hello", { token: "", device_id: 42 }, "h7");
    expect(await c.closedPromise).toBe(4401);
    expect(c.frames).toEqual([
      { type: "error", id: "h7", payload: { code: "auth", message: expect.stringContaining("device_id") } },
    ]);
  });

  it("hello - malformed JSON first gets auth and close 4401", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.raw("{oops");
    expect(await c.closedPromise).toBe(4401);
    expect(c.frames[0].payload.code).toBe("auth");
  });

  it("hello - a binary frame first gets auth and close 4401", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.raw(Buffer.from([0, 0, 0, 1, 1]));
    expect(await c.closedPromise).toBe(4401);
  });

  it("hello - a bad credential gets auth with the request id, then 4401", async () => {
    h = await startGateway({ authenticator: tokenAuthenticator({ good: "ann" }) });
    const c = await rawClient(h.url);
    c.send("hello", { token: "bad", device_id: "d" }, "h1");
    expect(await c.closedPromise).toBe(4401);
    expect(c.frames[0]).toMatchObject({ type: "error", id: "h1", payload: { code: "auth" } });
  });

  it("hello - an authenticator that crashes is internal, without details, and closes with 1011", async () => {
    h = await startGateway({
      authenticator: {
        authenticate: async () => {
          throw new Error("redis at 10.0.0.5 unreachable");
        },
      },
    });
    const c = await rawClient(h.url);
    c.send("hello", { token: "t", device_id: "d" }, "h1");
    expect(await c.closedPromise).toBe(1011);
    expect(c.frames[0]).toEqual({ type: "error", id: "h1", payload: { code: "internal", message: "internal error" } });
  });

  it("hello - an empty device_id is refused", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.send("hello", { token: "", device_id: "" }, "h1");
    expect(await c.closedPromise).toBe(4401);
  });

  it("hello - a device_id or device_name over 128 characters is unsupported naming the field, then 1008; nothing is stored", async () => {
    const storage = memoryStorage();
    h = await startGateway({ storage });
    const tooLong = [
      { field: "device_id", hello: { device_id: "d".repeat(129) } },
      { field: "device_name", hello: { device_id: "named", device_name: "🎉".repeat(129) } },
      { field: "device_name", hello: { device_id: "flood", device_name: "n".repeat(512 * 1024) } },
    ];
    for (const { field, hello } of tooLong) {
      const c = await rawClient(h.url);
      c.send("hello", { token: "", ...hello }, "h1");
      expect(await c.closedPromise).toBe(1008);
      expect(c.frames).toEqual([
        {
          type: "error",
          id: "h1",
          payload: { code: "unsupported", message: `hello: field "${field}": use at most 128 characters` },
        },
      ]);
    }
    expect(await storage.listDevices(ANONYMOUS_OWNER)).toEqual([]);
    // 128 characters are taken, counted as characters: an emoji is one.
    await Client.connect(h.url, { device_id: "d".repeat(128), device_name: "🎉".repeat(128) });
    expect((await storage.listDevices(ANONYMOUS_OWNER)).map((d) => [d.device_id.length, d.device_name])).toEqual([
      [128, "🎉".repeat(128)],
    ]);
  });

  it("hello - min_protocol above 1 gets unsupported and close 4426", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.send("hello", { token: "", device_id: "d", caps: { min_protocol: 2 } }, "h1");
    expect(await c.closedPromise).toBe(4426);
    expect(c.frames[0]).toMatchObject({ type: "error", id: "h1", payload: { code: "unsupported" } });
  });

  it("hello - hello.ok carries protocol, cursor, user, streaming and limits", async () => {
    h = await startGateway({
      authenticator: tokenAuthenticator({ tok: "ann" }),
      streaming: false,
      maxMediaBytes: 1234,
    });
    const c = await Client.connect(h.url, { token: "tok" });
    expect(c.frames[0]).toMatchObject({
      type: "hello.ok",
      payload: {
        protocol: 1,
        cursor: 0,
        user: "ann",
        streaming: false,
        limits: { max_frame_bytes: 1048576, max_media_bytes: 1234, history_max: 200, search_max: 100 },
      },
    });
  });

  it("hello - a second hello is unsupported and the connection stays", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const again = await c.request("hello", { token: "", device_id: "x" });
    expect(again.payload.code).toBe("unsupported");
    expect((await c.request("ping", { ts: 1 })).type).toBe("pong");
  });

  it("hello - the device is stored and updated on every hello, push targets kept", async () => {
    const storage = memoryStorage();
    h = await startGateway({ storage });
    const a = await Client.connect(h.url, {
      device_id: "phone",
      device_name: "Old",
      fcm_token: "f1",
      caps: { push: "fcm", media: false },
    });
    await a.close();
    const b = await Client.connect(h.url, { device_id: "phone", device_name: "New" });
    const owner = ANONYMOUS_OWNER;
    const device = await storage.getDevice(owner, "phone");
    expect(device).toMatchObject({
      device_id: "phone",
      device_name: "New",
      fcm_token: "f1",
      caps: { min_protocol: 1, media: true, push: "none", streaming: true },
    });
    b.send("fcm.register", { ntfy_topic: "topic-1" });
    // fcm.register has no response; frames are handled in order, so the pong comes after it.
    await b.request("ping", {});
    expect(b.frames.filter((f) => f.type === "error")).toEqual([]);
    expect((await storage.getDevice(owner, "phone"))?.ntfy_topic).toBe("topic-1");
  });

  it("hello - frames sent before hello.ok are handled after it, in order", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.send("hello", { token: "", device_id: "d" }, "h");
    c.send("ping", { ts: 7 }, "p");
    const pong = await c.waitFor((f) => f.id === "p");
    expect(c.frames.map((f) => f.type)).toEqual(["hello.ok", "pong"]);
    expect(pong.payload.ts).toBe(7);
  });

  it("hello - an upload sent whole before hello.ok (start, a binary chunk, end) is handled after it, in order", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    const bytes = Buffer.from("the bytes of a photo queued while offline");
    c.send("hello", { token: "", device_id: "d", caps: { media: true } }, "h");
    const start = { media_ref: "r1", kind: "image", mime: "image/png", size: bytes.length, filename: "a.png" };
    c.send("media.upload.start", start, "u");
    c.raw(Buffer.from(encodeChunk("r1", 0, bytes)));
    c.send("media.upload.end", { media_ref: "r1", sha256: createHash("sha256").update(bytes).digest("hex") }, "e");
    // A chunk of no upload in flight, sent before hello.ok too: not_found after it, not a sign-out.
    c.raw(Buffer.from(encodeChunk("nope", 0, bytes)));
    c.send("ping", {}, "p");
    await c.waitFor((f) => f.id === "p");
    expect(c.frames.map((f) => [f.type, f.payload.ok ?? f.payload.code])).toEqual([
      ["hello.ok", undefined],
      ["media.upload.ack", true],
      ["error", "not_found"],
      ["pong", undefined],
    ]);
  });

  it("hello - a binary first frame is no hello: auth, then 4401", async () => {
    h = await startGateway();
    const c = await rawClient(h.url);
    c.raw(Buffer.from(encodeChunk("r1", 0, Buffer.from("x"))));
    expect(await c.closedPromise).toBe(4401);
    expect(c.frames).toEqual([{ type: "error", payload: { code: "auth", message: expect.stringContaining("hello") } }]);
  });

  it("ping - pong echoes ts", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    expect(await c.request("ping", { ts: 42 })).toMatchObject({ type: "pong", payload: { ts: 42 } });
  });
});

describe("owners", () => {
  it("owners - two owners never see each other's frames, channels or messages", async () => {
    h = await startGateway({ authenticator: tokenAuthenticator({ a: "ann", b: "bob" }) });
    const ann = await Client.connect(h.url, { token: "a" });
    const ann2 = await Client.connect(h.url, { token: "a" });
    const bob = await Client.connect(h.url, { token: "b" });
    const created = await ann.request("channel.create", { name: "Secret", kind: "channel" });
    await ann.say({ chat_id: created.payload.chat_id, text: "private words" });
    await ann2.waitFor((f) => f.type === "message.stop");
    expect(bob.frames.map((f) => f.type)).toEqual(["hello.ok"]);
    expect((await bob.request("history", { chat_id: created.payload.chat_id })).payload.code).toBe("not_found");
    expect((await bob.request("message.send", { chat_id: created.payload.chat_id, text: "x" })).payload.code).toBe(
      "not_found",
    );
    expect((await bob.request("search", { query: "private", scope: "all" })).payload.hits).toEqual([]);
    const list = await bob.request("channel.list", {});
    expect(list.payload.channels.map((c: any) => c.chat_id)).toEqual(["default"]);
    expect((await bob.request("sync", { cursor: 0 })).payload).toEqual({ cursor: 0 });
  });
});
