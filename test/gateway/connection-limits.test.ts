// Every connection is bounded in time, count and rate: tried through real sockets, as an attacker would.
import { afterEach, describe, expect, it } from "vitest";
import { encodeChunk } from "chat-gateway/protocol";
import { tokenAuthenticator } from "chat-gateway";
import { manualClock } from "chat-gateway/testing";
import { Client, startGateway, type Harness } from "./harness.js";
import { sendAndSettle, sha, upload } from "./media-helpers.js";
import { sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A socket that has not sent hello yet. */
async function raw(url: string, headers?: Record<string, string>): Promise<Client> {
  const c = new Client(url, headers);
  await c.opened;
  return c;
}

describe("connection limits", () => {
  it("limits - hello.ok announces every bound a client can plan around", async () => {
    h = await startGateway({
      rateLimit: { perSecond: 7, burst: 21 },
      maxPullsPerConnection: 3,
      helloTimeoutMs: 4_000,
      historyMaxBytes: 9_000,
      maxConnectionsPerOwner: 5,
    });
    const c = await Client.connect(h.url);
    expect(c.frames[0].payload.limits).toEqual({
      max_frame_bytes: 1024 * 1024,
      max_media_bytes: 50 * 1024 * 1024,
      history_max: 200,
      search_max: 100,
      history_max_bytes: 9_000,
      rate_per_second: 7,
      rate_burst: 21,
      uploads_in_flight: 4,
      pulls_in_flight: 3,
      hello_timeout_ms: 4_000,
      connections_per_owner: 5,
      picker_text_max: 4000,
    });
  });

  it("limits - a socket that does not complete hello in time gets auth and close 4408; one that did stays", async () => {
    h = await startGateway({ helloTimeoutMs: 200 });
    const done = await Client.connect(h.url);
    const silent = await raw(h.url);
    expect(await silent.closedPromise).toBe(4408);
    expect(silent.frames).toEqual([
      { type: "error", payload: { code: "auth", message: "hello not completed within 200 ms" } },
    ]);
    await sleep(100);
    expect(done.closeCode).toBeUndefined();
    expect((await done.request("ping", {})).type).toBe("pong");
  });

  it("limits - one connection more than the owner's cap is refused rate_limited with 4429; other owners and later connections go on", async () => {
    h = await startGateway({ maxConnectionsPerOwner: 2, authenticator: tokenAuthenticator({ a: "ann", b: "bob" }) });
    const first = await Client.connect(h.url, { token: "a" });
    await Client.connect(h.url, { token: "a" });
    const third = await raw(h.url);
    const refused = await third.request("hello", { token: "a", device_id: "d3" });
    expect(refused).toMatchObject({ type: "error", payload: { code: "rate_limited" } });
    expect(await third.closedPromise).toBe(4429);
    const bob = await Client.connect(h.url, { token: "b" });
    expect((await bob.request("ping", {})).type).toBe("pong");
    await first.close();
    await sleep(50);
    expect((await Client.connect(h.url, { token: "a" })).frames[0].type).toBe("hello.ok");
  });

  it("limits - hellos racing in parallel cannot pass the owner's cap together", async () => {
    h = await startGateway({ maxConnectionsPerOwner: 2 });
    const sockets = await Promise.all(Array.from({ length: 6 }, () => raw(h!.url)));
    const answers = await Promise.all(sockets.map((c, i) => c.request("hello", { token: "", device_id: `race-${i}` })));
    expect(answers.filter((f) => f.type === "hello.ok")).toHaveLength(2);
    expect(answers.filter((f) => f.payload.code === "rate_limited")).toHaveLength(4);
  });

  it("limits - one connection more than the address cap is refused before hello; the address comes from the transport", async () => {
    // Behind a proxy the address is what clientAddress says (here: a header), not the proxy's socket.
    h = await startGateway({ maxConnectionsPerIp: 2 }, { clientAddress: (req) => String(req.headers["x-client"]) });
    const from1 = { "x-client": "10.0.0.1" };
    const a = await raw(h.url, from1);
    await raw(h.url, from1);
    const over = await raw(h.url, from1);
    expect(await over.closedPromise).toBe(4429);
    expect(over.frames[0]).toMatchObject({ type: "error", payload: { code: "rate_limited" } });
    const other = await Client.connect(h.url, {}, { "x-client": "10.0.0.2" });
    expect((await other.request("ping", {})).type).toBe("pong");
    await a.close();
    await sleep(50);
    expect((await Client.connect(h.url, {}, from1)).frames[0].type).toBe("hello.ok");
  });

  it("limits - the frame budget applies from the first frame: hello plus a burst of requests gets at most the burst answered", async () => {
    h = await startGateway({ rateLimit: { perSecond: 1, burst: 10 } });
    const c = await raw(h.url);
    c.send("hello", { token: "", device_id: "flood" }, "h");
    // Not pings: a small ping is answered outside the budget (docs/PROTOCOL.md §2.4).
    for (let i = 0; i < 300; i++) c.send("channel.list", {}, `p${i}`);
    await c.waitFor((f) => f.id === "p299");
    await sleep(100);
    expect(c.frames.find((f) => f.id === "h")?.type).toBe("hello.ok");
    expect(c.of("channel.list").length).toBeLessThanOrEqual(10);
    expect(c.frames.filter((f) => f.payload?.code === "rate_limited").length).toBeGreaterThanOrEqual(290);
  });

  it("limits - a refused frame carries its id when small; a large one is not parsed for it", async () => {
    h = await startGateway({ rateLimit: { perSecond: 1, burst: 2 } });
    const c = await raw(h.url);
    c.send("hello", { token: "", device_id: "big" }, "h");
    c.send("channel.list", {}, "p1");
    c.send("channel.list", {}, "small");
    c.send("channel.list", { pad: "x".repeat(20_000) }, "large");
    await c.waitFor((f) => f.id === "small");
    await sleep(100);
    expect(c.frames.find((f) => f.id === "small")?.payload?.code).toBe("rate_limited");
    const refused = c.frames.filter((f) => f.payload?.code === "rate_limited");
    expect(refused).toHaveLength(2);
    expect(refused.find((f) => f.id !== "small")?.id).toBeUndefined();
  });

  it("limits - garbage binary messages spend the frame budget and past it get no reply; chunks of an upload in flight are free", async () => {
    // The budget refills only when the test moves this clock: the count below is exact however slow the machine.
    const clock = manualClock();
    h = await startGateway({ rateLimit: { perSecond: 5, burst: 10 }, clock });
    const c = await Client.connect(h.url);
    // 30 chunks of one upload, well past the burst: all taken.
    const bytes = Buffer.alloc(30 * 1000, 7);
    expect((await upload(c, "ok", bytes, { chunk: 1000 })).payload).toEqual({ ok: true, media_ref: "ok" });
    const from = c.frames.length;
    for (let i = 0; i < 20_000; i++)
      c.raw(i % 2 ? Buffer.from([1, 2, 3]) : Buffer.from(encodeChunk("nobody", 0, Buffer.alloc(10))));
    await c.waitFor((f) => f.type === "error", 30_000, from);
    // Past the budget the gateway stops reading for a while on its clock: the test moves the clock
    // on until the flood is read through and the ping behind it (answered whatever the frame
    // budget holds) comes back, counting how far it moved.
    c.send("ping", {}, "after-flood");
    let advanced = 0;
    while (!c.frames.some((f) => f.id === "after-flood")) {
      expect(c.closeCode).toBeUndefined();
      clock.advance(200);
      advanced += 200;
      // A few loop turns for the loopback socket to carry what the gateway wrote; no wall-clock wait.
      for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(c.frames.find((f) => f.id === "after-flood")?.type).toBe("pong");
    expect(c.closeCode).toBeUndefined();
    // Replies to the garbage carry no id: the burst plus what the budget refilled over the time the
    // clock was moved (exact, however slow the machine), nowhere near one reply each.
    const replies = c.frames.slice(from).filter((f) => f.id === undefined);
    expect(replies.length).toBeGreaterThan(0);
    expect(replies.length).toBeLessThanOrEqual(10 + (5 * advanced) / 1000);
    expect(replies.length).toBeLessThan(20_000 / 10);
    expect(replies.every((f) => f.type === "error")).toBe(true);
    // The upload path still works after the flood, once the budget refilled.
    clock.advance(2_000);
    expect(
      await sendAndSettle(c, "media.upload.start", {
        media_ref: "after",
        kind: "document",
        mime: "text/plain",
        size: 2,
        filename: "a",
      }),
    ).toBeUndefined();
    c.raw(Buffer.from(encodeChunk("after", 0, Buffer.from("hi"))));
    expect(
      (await c.request("media.upload.end", { media_ref: "after", sha256: sha(Buffer.from("hi")) })).payload.ok,
    ).toBe(true);
  }, 120_000);

  it("limits - a flood of garbage on one connection does not hold up another connection's frames", async () => {
    h = await startGateway({ rateLimit: { perSecond: 5, burst: 10 } });
    const flooder = await Client.connect(h.url, { device_id: "flooder" });
    const other = await Client.connect(h.url, { device_id: "other" });
    const from = flooder.frames.length;
    for (let i = 0; i < 100_000; i++) flooder.raw(Buffer.from([1, 2, 3]));
    // The flooder's own ping is queued behind its 100,000 frames; once the gateway is working them
    // off (its first reply is here), the other connection's ping is answered before that ping.
    const order: string[] = [];
    const flooderPong = flooder.request("ping", {}, 120_000).then(() => order.push("flooder"));
    await flooder.waitFor((f) => f.type === "error", 120_000, from);
    await other.request("ping", {}, 120_000).then(() => order.push("other"));
    await flooderPong;
    expect(order).toEqual(["other", "flooder"]);
  }, 180_000);
});
