// chat-gateway/client against a real gateway: the example server, or the test harness where a
// test needs server-side posting.
import { createHash, randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { isClientError, memoryCursorStore, type GatewayClientOptions } from "chat-gateway/client";
import type { ServerFrame } from "chat-gateway/protocol";
import { startGateway, type Harness } from "../gateway/harness.js";
import { cleanupAfterEach, exampleServer, startExample, tempDir, testClient, until, wsUrl } from "./helpers.js";

const cleanups = cleanupAfterEach();
const example = () => exampleServer(cleanups);
const client = (url: string, options: Partial<GatewayClientOptions> = {}) => testClient(cleanups, url, options);

const ofMessage = (frames: ServerFrame[], id: string) =>
  frames.filter((f) => (f.payload as { message_id?: string }).message_id === id);

describe("client - conversation", () => {
  it("says hello, streams an answer as typed events, and ends with message.stop and typing off", async () => {
    const server = await example();
    const { client: c, frames } = client(wsUrl(server));
    const hello = await c.connect();
    expect(hello.protocol).toBe(1);
    expect(hello.user).toBeNull();
    await c.ready();
    expect(c.state).toBe("open");

    const updates: string[] = [];
    c.on("message.update", (p) => updates.push(p.text));
    const stop = new Promise<ServerFrame<"message.stop">>((resolve) => c.on("message.stop", (_p, f) => resolve(f)));
    // Long enough to stream over several of the 100 ms between a delta device's updates.
    const text = "hello there, gateway, please answer in a few pieces. ".repeat(5).trim();
    const echo = await c.sendMessage({ chat_id: "default", text });
    expect(echo).toMatchObject({ role: "user", text, chat_id: "default", thread_id: null });
    expect(echo.client_msg_id).toMatch(/^cm/);
    const final = await stop;
    expect(final.payload.final_text).toBe(`You said: ${text}`);
    expect(final.payload.reply_to).toBe(echo.message_id);
    expect(final.payload.runtime.model).toBe("demo");
    expect(final.seq).toBeGreaterThan(0);
    expect(updates.length).toBeGreaterThan(1);
    expect(updates.at(-1)!.length).toBeLessThanOrEqual(final.payload.final_text.length);
    const mine = ofMessage(frames, final.payload.message_id).map((f) => f.type);
    expect(mine[0]).toBe("message.start");
    expect(mine.at(-1)).toBe("message.stop");
    await until(() => frames.some((f) => f.type === "typing" && !(f.payload as { on: boolean }).on), "typing off");
    expect(c.cursor).toBe(final.seq);
  });

  it("reports tool progress for a tool: message and creates channels", async () => {
    const server = await example();
    const { client: c } = client(wsUrl(server));
    await c.connect();
    const created = await c.request("channel.create", { name: "Work", kind: "channel" });
    expect(created).toMatchObject({ name: "Work", kind: "channel", archived: false });
    const list = await c.request("channel.list", {});
    expect(list.channels.map((ch) => ch.name)).toEqual(expect.arrayContaining(["Work"]));

    const ended = new Promise<{ name: string; output: unknown; ok: boolean; duration: number }>((resolve) =>
      c.on("tool.end", resolve),
    );
    const started = new Promise<{ args: Record<string, unknown> }>((resolve) => c.on("tool.start", resolve));
    await c.sendMessage({ chat_id: created.chat_id, text: "tool: ping" });
    expect((await started).args).toEqual({ text: "ping" });
    expect(await ended).toMatchObject({ name: "echo", output: "ping", ok: true });
  });

  it("with streaming off receives one message frame per answer; on again, start/update/stop", async () => {
    const server = await example();
    const { client: c, frames } = client(wsUrl(server), { streaming: false });
    await c.connect();
    await c.ready();
    const whole = new Promise<ServerFrame<"message">>((resolve) =>
      c.on("message", (p, f) => p.role === "assistant" && resolve(f)),
    );
    const echo = await c.sendMessage({ chat_id: "default", text: "no stream" });
    const answer = await whole;
    expect(answer.payload).toMatchObject({ role: "assistant", text: "You said: no stream", reply_to: echo.message_id });
    expect(answer.seq).toBeGreaterThan(0);
    await until(() => frames.some((f) => f.type === "typing" && !(f.payload as { on: boolean }).on), "typing off");
    expect(frames.filter((f) => f.type.startsWith("message.") && f.type !== "message.deleted")).toEqual([]);

    const hello = await c.setStreaming(true);
    expect(hello.protocol).toBe(1);
    expect(c.streaming).toBe(true);
    await c.ready();
    const stop = new Promise<ServerFrame<"message.stop">>((resolve) => c.on("message.stop", (_p, f) => resolve(f)));
    await c.sendMessage({ chat_id: "default", text: "stream again" });
    expect((await stop).payload.final_text).toBe("You said: stream again");
  });
});

describe("client - requests", () => {
  it("rejects with timeout when no response comes in time", async () => {
    const server = await example();
    const { client: c } = client(wsUrl(server));
    await c.connect();
    // fcm.register has no response frame: the request can only time out.
    const started = Date.now();
    const error = await c
      .request("fcm.register" as "ping", { ntfy_topic: "t" } as never, { timeoutMs: 150 })
      .catch((e: unknown) => e);
    expect(isClientError(error, "timeout")).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    // The connection is still usable.
    expect((await c.request("ping", { ts: 7 })).ts).toBe(7);
  });

  it("rejects with the gateway's error code for an error frame with the request's id", async () => {
    const server = await example();
    const { client: c } = client(wsUrl(server));
    await c.connect();
    const notFound = await c
      .request("history", { chat_id: "default", before_message_id: "nope" })
      .catch((e: unknown) => e);
    expect(isClientError(notFound, "not_found")).toBe(true);
    expect((notFound as Error).message).toMatch(/before_message_id/);
    const unsupported = await c.request("history", { chat_id: "default", limit: 0 }).catch((e: unknown) => e);
    expect(isClientError(unsupported, "unsupported")).toBe(true);
    const unknownChat = await c.sendMessage({ chat_id: "no-such-chat", text: "hi" }).catch((e: unknown) => e);
    expect(unknownChat).toMatchObject({ code: "not_found", requestType: "message.send" });
  });

  it("stops with unauthorized when the HTTP gate refuses the upgrade", async () => {
    const server = await protectedExample();
    const { client: anonymous } = client(wsUrl(server));
    const refused = anonymous.connect().catch((e: unknown) => e);
    const reason = await new Promise<string>((resolve) => anonymous.on("unauthorized", resolve));
    expect(reason).toMatch(/401/);
    expect(isClientError(await refused, "auth")).toBe(true);
    expect(anonymous.state).toBe("unauthorized");

    const login = await fetch(`${server.url}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: "alice-password" }),
    });
    const { token } = (await login.json()) as { token: string };
    const { client: signedIn } = client(wsUrl(server), { token, headers: { authorization: `Bearer ${token}` } });
    expect((await signedIn.connect()).user).toBe("alice");
  });

  it("a 401 to the upgrade names the fix: the token in an Authorization header, or a new one when the header's was refused", async () => {
    const server = await protectedExample();
    // The token only in hello: the gate refuses the upgrade before any hello is read.
    const { client: inHello } = client(wsUrl(server), { token: "a-token-sent-only-in-hello" });
    const missing = await inHello.connect().catch((e: unknown) => e);
    expect(isClientError(missing, "auth")).toBe(true);
    expect((missing as Error).message).toMatch(/401/);
    expect((missing as Error).message).toMatch(/headers: \{ Authorization: `Bearer \$\{token\}` \}/);

    const { client: stale } = client(wsUrl(server), { headers: { Authorization: "Bearer no-such-session" } });
    const refused = await stale.connect().catch((e: unknown) => e);
    expect(isClientError(refused, "auth")).toBe(true);
    expect((refused as Error).message).toMatch(
      /the token in the Authorization header is not a valid session or device token/,
    );
    expect(stale.state).toBe("unauthorized");
  });
});

/** The example server with login on (one user, alice), gone after the test. */
async function protectedExample() {
  const { dir, cleanup } = await tempDir();
  cleanups.push(cleanup);
  const { HASHES } = await import("../http/helpers.js");
  const { writeFile } = await import("node:fs/promises");
  await writeFile(`${dir}/users.json`, JSON.stringify({ users: { alice: HASHES["alice-password"] } }), {
    mode: 0o600,
  });
  const server = await startExample(dir);
  cleanups.push(() => server.close());
  return server;
}

describe("client - refused hello", () => {
  it("stops without retrying when the gateway refuses the hello's ntfy topic (close 1008), naming the field", async () => {
    const harness = await startGateway();
    cleanups.push(() => harness.close());
    let connects = 0;
    harness.gateway.on("disconnect", () => void connects++);
    const { client: c } = client(harness.url, { ntfyTopic: "../admin" });
    const error = await c.connect().catch((e: unknown) => e);
    expect(isClientError(error, "closed")).toBe(true);
    expect((error as Error).message).toContain('"ntfy_topic"');
    expect(c.state).toBe("closed");
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(connects).toBe(1);
  });
});

describe("client - sync and history", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it("pages back through more than 200 messages with before_message_id", async () => {
    harness = await startGateway();
    for (let i = 0; i < 230; i++) await harness.gateway.post(ANONYMOUS_OWNER, "default", { text: `note ${i}` });
    const { client: c } = client(harness.url);
    await c.connect();
    const pager = c.historyPager({ chat_id: "default" }, { limit: 200 });
    const first = await pager.next();
    expect(first).toHaveLength(200);
    expect(first.at(-1)!.text).toBe("note 229");
    expect(pager.hasMore).toBe(true);
    const second = await pager.next();
    expect(second.map((m) => m.text)).toEqual(Array.from({ length: 30 }, (_, i) => `note ${i}`));
    expect(pager.hasMore).toBe(false);
    expect(await pager.next()).toEqual([]);

    const all: string[] = [];
    for await (const page of c.historyPager({ chat_id: "default", thread_id: null }))
      all.unshift(...page.map((m) => m.text));
    expect(all).toHaveLength(230);
    expect(new Set(all).size).toBe(230);
    expect(all[0]).toBe("note 0");
  });

  it("syncs what it missed from its persisted cursor, and signals reset for a cursor the gateway no longer has", async () => {
    harness = await startGateway();
    const store = memoryCursorStore();
    const first = client(harness.url, { deviceId: "phone", cursorStore: store });
    await first.client.connect();
    await first.client.ready();
    await first.client.sendMessage({ chat_id: "default", text: "before" });
    await until(() => first.frames.find((f) => f.type === "message.stop"), "first answer");
    first.client.close();
    const seen = store.get() as number;
    expect(seen).toBeGreaterThan(0);

    const other = client(harness.url);
    await other.client.connect();
    await other.client.sendMessage({ chat_id: "default", text: "while away" });
    await until(() => other.frames.find((f) => f.type === "message.stop"), "second answer");

    const again = client(harness.url, { deviceId: "phone", cursorStore: store });
    const synced = new Promise<number>((resolve) => again.client.on("synced", resolve));
    await again.client.connect();
    const cursor = await synced;
    const replayed = again.frames.filter((f) => f.seq !== undefined);
    expect(replayed.map((f) => f.type)).toEqual(["message", "message.stop"]);
    expect(replayed.every((f) => f.seq! > seen)).toBe(true);
    expect(store.get()).toBe(cursor);

    const stale = client(harness.url, { cursorStore: memoryCursorStore(10_000) });
    const reset = new Promise<number>((resolve) => stale.client.on("reset", resolve));
    await stale.client.connect();
    expect(await reset).toBe(cursor);
  });

  it("uploads and downloads media with a matching sha256, and sends it in a message", async () => {
    harness = await startGateway();
    const { client: c } = client(harness.url);
    await c.connect();
    const bytes = randomBytes(600 * 1024);
    const progress: number[] = [];
    const ref = await c.upload(bytes, {
      mime: "image/png",
      filename: "pic.png",
      onProgress: (sent) => progress.push(sent),
    });
    expect(ref).toMatchObject({ kind: "image", mime: "image/png", size: bytes.length, filename: "pic.png" });
    expect(progress.at(-1)).toBe(bytes.length);
    expect(progress.length).toBeGreaterThanOrEqual(4);

    const got = await c.download(ref.media_id);
    expect(got.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(Buffer.from(got.bytes).equals(bytes)).toBe(true);

    const echo = await c.sendMessage({ chat_id: "default", text: "", media_refs: [ref.media_id] });
    expect(echo.media).toEqual([expect.objectContaining({ media_id: ref.media_id, kind: "image" })]);

    const limited = await startGateway({ maxMediaBytes: 1000 });
    cleanups.push(() => limited.close());
    const { client: small } = client(limited.url);
    await small.connect();
    const tooLarge = await small.upload(new Uint8Array(1001), { mime: "image/png" }).catch((e: unknown) => e);
    expect(isClientError(tooLarge, "media_too_large")).toBe(true);
    expect((await small.upload(new Uint8Array(1000), { mime: "image/png" })).size).toBe(1000);

    // More uploads at once than the gateway keeps in flight per connection (4): they queue.
    const many = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        c.upload(randomBytes(2 * 1024 * 1024), { mime: "application/pdf", filename: `f${i}.pdf` }),
      ),
    );
    expect(new Set(many.map((m) => m.media_id)).size).toBe(7);

    const missing = await c.download("md-nope").catch((e: unknown) => e);
    expect(isClientError(missing, "not_found")).toBe(true);
    const tooBig = await c.upload(new Uint8Array(10), { mime: "text/plain" });
    expect(tooBig.kind).toBe("document");
  });
});
