// What one request can make the gateway send is bounded: pulls in flight, bytes queued, history pages.
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type ToolCall } from "chat-gateway";
import { decodeChunk } from "chat-gateway/protocol";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { upload } from "./media-helpers.js";
import { answerWithTools, unboundedTools } from "../fixtures/unbounded-tools.js";
import { sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const CHUNK = 256 * 1024;

/** Stop reading the socket: what the gateway sends piles up in its buffers. */
function pauseReading(c: Client): void {
  (c.ws as any)._socket.pause();
}
function resumeReading(c: Client): void {
  (c.ws as any)._socket.resume();
}

/** Every byte of the chunks received for `id`, in arrival order. */
function pulledBytes(c: Client, id: string): Buffer {
  const chunks = c.binary.map((b) => decodeChunk(new Uint8Array(b))).filter((ch) => ch.media === id);
  return Buffer.concat(chunks.map((ch) => Buffer.from(ch.bytes)));
}

describe("transfer limits", () => {
  it("limits - one media.pull more than the pulls in flight is rate_limited; the others complete", async () => {
    h = await startGateway({ maxPullsPerConnection: 2 });
    const c = await Client.connect(h.url);
    const bytes = randomBytes(8 * 1024 * 1024);
    expect((await upload(c, "big", bytes)).payload.ok).toBe(true);
    pauseReading(c);
    for (const id of ["p1", "p2", "p3"]) c.send("media.pull", { media_id: "big" }, id);
    await sleep(300);
    resumeReading(c);
    expect(await c.waitFor((f) => f.id === "p3")).toMatchObject({ type: "error", payload: { code: "rate_limited" } });
    for (const id of ["p1", "p2"])
      expect((await c.waitFor((f) => f.id === id, 10_000)).payload).toEqual({ ok: true, media_id: "big" });
    expect(pulledBytes(c, "big").length).toBe(2 * bytes.length);
    // The slots are free again.
    expect((await c.request("media.pull", { media_id: "big" }, 10_000)).payload.ok).toBe(true);
  }, 20_000);

  it("slow consumers - a device that stops reading while pulling media is closed 1013 with the bytes queued bounded; another connection is unaffected", async () => {
    const softBytes = 64 * 1024;
    // Room for the chunks of both pulls in flight past the soft limit, so a device that reads is never closed.
    const hardBytes = softBytes + 2 * (CHUNK + 1024) + 64 * 1024;
    h = await startGateway({ backpressure: { softBytes, hardBytes }, rateLimit: { perSecond: 1000, burst: 1000 } });
    const other = await Client.connect(h.url);
    const slow = await Client.connect(h.url);
    const bytes = randomBytes(4 * 1024 * 1024);
    expect((await upload(slow, "m", bytes)).payload.ok).toBe(true);
    const servers = [...h.transport.wss.clients];
    let most = 0;
    const sampler = setInterval(() => {
      for (const ws of servers) most = Math.max(most, ws.bufferedAmount);
    }, 2);
    pauseReading(slow);
    const serverClosed = new Promise<void>((resolve) => {
      for (const ws of servers) ws.once("close", () => resolve());
      // The gateway starts the close handshake at once; the socket ends when the peer answers.
      const check = setInterval(() => {
        if (servers.some((ws) => ws.readyState === ws.CLOSING || ws.readyState === ws.CLOSED)) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    let pulls = 0;
    const puller = setInterval(() => {
      for (let i = 0; i < 50; i++) slow.send("media.pull", { media_id: "m" }, `pull${++pulls}`);
    }, 5);
    // No window of time: the close comes, or the test's own timeout fails it.
    await serverClosed;
    clearInterval(puller);
    await sleep(50);
    clearInterval(sampler);
    resumeReading(slow);
    expect(await slow.closedPromise).toBe(1013);
    // The cap is checked before each send: at most the cap plus one frame (a chunk) is ever queued.
    expect(most).toBeGreaterThan(softBytes);
    expect(most).toBeLessThanOrEqual(hardBytes + CHUNK + 1024);
    expect((await other.request("ping", {})).type).toBe("pong");
    expect((await other.request("media.pull", { media_id: "m" }, 10_000)).payload.ok).toBe(true);
    expect(pulledBytes(other, "m").equals(bytes)).toBe(true);
  }, 60_000);

  it("history - a page is capped in bytes: fewer messages, has_more stays true, and paging reaches every message once", async () => {
    const cap = 10_000;
    h = await startGateway({ historyMaxBytes: cap });
    const c = await Client.connect(h.url);
    const posted: string[] = [];
    for (let i = 0; i < 12; i++)
      posted.push((await h.gateway.post(ANONYMOUS_OWNER, "default", { text: `${i} ${"x".repeat(3000)}` })).message_id);
    const seen: string[] = [];
    let before: string | undefined;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(12);
      const page = await c.request("history", {
        chat_id: "default",
        limit: 200,
        ...(before ? { before_message_id: before } : {}),
      });
      expect(frameBytes(page)).toBeLessThanOrEqual(cap + 500);
      expect(page.payload.messages.length).toBeGreaterThan(0);
      expect(page.payload.messages.length).toBeLessThan(12);
      seen.unshift(...page.payload.messages.map((m: { message_id: string }) => m.message_id));
      if (!page.payload.has_more) break;
      before = page.payload.oldest_message_id;
    }
    expect(seen).toEqual(posted);
  });

  it("history - a single message over the byte cap comes alone, cut to fit and marked truncated, and paging goes on past it", async () => {
    const cap = 10_000;
    h = await startGateway({ historyMaxBytes: cap });
    const c = await Client.connect(h.url);
    const older = (await h.gateway.post(ANONYMOUS_OWNER, "default", { text: "older" })).message_id;
    const text = 'é😀"\n'.repeat(20_000);
    const huge = await h.gateway.post(ANONYMOUS_OWNER, "default", { text, reasoning: "r".repeat(50_000) });
    const page = await c.request("history", { chat_id: "default" });
    expect(frameBytes(page)).toBeLessThanOrEqual(cap + 500);
    expect(page.payload).toMatchObject({ has_more: true, oldest_message_id: huge.message_id });
    const [item] = page.payload.messages;
    expect(page.payload.messages).toHaveLength(1);
    expect(item).toMatchObject({ message_id: huge.message_id, truncated: true });
    expect(item.text.length).toBeGreaterThan(1_000);
    expect(text.startsWith(item.text)).toBe(true);
    expect(item.text).not.toMatch(/[\ud800-\udbff]$/);
    const next = await c.request("history", { chat_id: "default", before_message_id: huge.message_id });
    expect(next.payload.messages.map((m: { message_id: string }) => m.message_id)).toEqual([older]);
    expect(next.payload.has_more).toBe(false);
  });

  it("history - a message whose tool calls pass the byte cap comes cut to fit: outputs first, then arguments, the calls in order", {
    // 46 MB of stored tool calls cut twice: about 3 s alone, several times that beside other files.
    timeout: 60_000,
  }, async () => {
    // As stored before an answer's tool calls were bounded: 1,152 calls with 20 KB of arguments and output.
    const tools = unboundedTools(1_152, 20_000, 20_000);
    const answer = answerWithTools("m-tools", "answer", tools);
    for (const cap of [524_288, 10_000]) {
      const storage = memoryStorage();
      await storage.commit(ANONYMOUS_OWNER, { messages: [answer] });
      h = await startGateway({ storage, historyMaxBytes: cap });
      const c = await Client.connect(h.url);
      // The request waits as long as the test may: cutting 46 MB is the work under test, not a delay.
      const page = await c.request("history", { chat_id: "default" }, 50_000);
      expect(frameBytes(page)).toBeLessThanOrEqual(cap + 500);
      const [item] = page.payload.messages;
      expect(item).toMatchObject({ message_id: "m-tools", text: "answer", truncated: true });
      const kept = item.tools as ToolCall[];
      expect(kept.map((t) => t.name)).toEqual(tools.slice(0, kept.length).map((t) => t.name));
      if (cap === 524_288) {
        expect(kept).toHaveLength(1_152);
        expect(kept[0]).toMatchObject({ args: { body: "a".repeat(20_000) }, truncated: true });
        expect(kept.at(-1)).toMatchObject({ args: "", output: "", truncated: true });
        expect(kept.every((t) => t.output === "" || (t.output as string).length < 20_000)).toBe(true);
      } else {
        // Not even every call's name fits: the first ones come, the page still moves on.
        expect(kept.length).toBeGreaterThan(10);
        expect(kept.length).toBeLessThan(1_152);
      }
      await h.close();
      h = undefined;
    }
  });
});

function frameBytes(frame: Frame): number {
  return Buffer.byteLength(JSON.stringify(frame), "utf8");
}
