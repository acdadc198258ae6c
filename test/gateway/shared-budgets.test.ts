// Budgets that reconnecting does not refill (docs/PROTOCOL.md §2.4), tried through real sockets on
// 127.0.0.1 as an attacker would: churning connections from one address, spreading one owner over
// addresses, opening connections faster than the connect rate, and hellos past the owner's cap.
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness | undefined;
const open: Client[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
  await h?.close();
  h = undefined;
});

/** A socket from `address` (the transport reads it from a header here) that has not sent hello. */
async function raw(url: string, address: string): Promise<Client> {
  const c = new Client(url, { "x-client": address });
  open.push(c);
  await c.opened;
  return c;
}

const byHeader = { clientAddress: (req: { headers: Record<string, unknown> }) => String(req.headers["x-client"]) };

/**
 * Sends `count` small requests at once and says how many were answered and how many refused. Not
 * pings: a small ping is answered outside the budgets (docs/PROTOCOL.md §2.4).
 */
async function requests(c: Client, count: number): Promise<{ answered: number; refused: number }> {
  const from = c.frames.length;
  const ids = Array.from({ length: count }, (_, i) => `p${from}-${i}`);
  for (const id of ids) c.send("channel.list", {}, id);
  await c.waitFor(() => ids.every((id) => c.frames.some((f) => f.id === id)), 5000, from);
  const replies = c.frames.slice(from).filter((f) => ids.includes(f.id!));
  return {
    answered: replies.filter((f) => f.type === "channel.list").length,
    refused: replies.filter((f) => f.payload?.code === "rate_limited").length,
  };
}

describe("shared budgets", () => {
  it("budgets - churning connections from one address does not refill its frame budget; another address has its own", async () => {
    // The per-connection budget alone would answer every request of every new connection.
    h = await startGateway(
      { rateLimit: { perSecond: 1000, burst: 1000 }, rateLimitPerAddress: { perSecond: 0.001, burst: 30 } },
      byHeader,
    );
    let answered = 0;
    let refusedHellos = 0;
    for (let round = 0; round < 4; round++) {
      const c = await raw(h.url, "10.0.0.1");
      const hello = await c.request("hello", { token: "", device_id: `churn-${round}` });
      if (hello.type === "hello.ok") answered += 1 + (await requests(c, 20)).answered;
      else {
        expect(hello.payload.code).toBe("rate_limited");
        refusedHellos++;
      }
      await c.close();
    }
    expect(answered).toBe(30);
    expect(refusedHellos).toBeGreaterThan(0);
    const other = await raw(h.url, "10.0.0.2");
    expect((await other.request("hello", { token: "", device_id: "other" })).type).toBe("hello.ok");
    expect(await requests(other, 20)).toEqual({ answered: 20, refused: 0 });
  });

  it("budgets - one owner's connections share a budget across addresses, counted after hello", async () => {
    h = await startGateway(
      { rateLimit: { perSecond: 1000, burst: 1000 }, rateLimitPerOwner: { perSecond: 0.001, burst: 10 } },
      byHeader,
    );
    const a = await raw(h.url, "10.0.0.1");
    expect((await a.request("hello", { token: "", device_id: "a" })).type).toBe("hello.ok");
    expect(await requests(a, 15)).toEqual({ answered: 10, refused: 5 });
    const b = await raw(h.url, "10.0.0.2");
    expect((await b.request("hello", { token: "", device_id: "b" })).type).toBe("hello.ok");
    expect(await requests(b, 5)).toEqual({ answered: 0, refused: 5 });
  });

  it("budgets - new connections past the connect rate of an address are refused rate_limited with close 4429", async () => {
    h = await startGateway({ connectRateLimit: { perSecond: 0.001, burst: 3 } }, byHeader);
    for (let i = 0; i < 3; i++) {
      const c = await raw(h.url, "10.0.0.1");
      expect((await c.request("hello", { token: "", device_id: `ok-${i}` })).type).toBe("hello.ok");
      await c.close();
    }
    const over = await raw(h.url, "10.0.0.1");
    expect(await over.closedPromise).toBe(4429);
    expect(over.frames[0]).toMatchObject({
      type: "error",
      payload: { code: "rate_limited", message: "too many new connections from this address; reconnect with backoff" },
    });
    const other = await raw(h.url, "10.0.0.2");
    expect((await other.request("hello", { token: "", device_id: "elsewhere" })).type).toBe("hello.ok");
  });

  it("budgets - a hello refused by the owner's connection cap stores no device record, also when hellos race", async () => {
    h = await startGateway({ maxConnectionsPerOwner: 2 });
    const sockets = await Promise.all(Array.from({ length: 6 }, () => raw(h!.url, "127.0.0.1")));
    const answers = await Promise.all(
      sockets.map((c, i) =>
        c.request("hello", { token: "", device_id: `race-${i}`, ntfy_topic: `planted-${i}`, caps: { push: "ntfy" } }),
      ),
    );
    const admitted = sockets.map((_, i) => `race-${i}`).filter((_, i) => answers[i]!.type === "hello.ok");
    expect(admitted).toHaveLength(2);
    expect(answers.filter((f) => f.payload.code === "rate_limited")).toHaveLength(4);
    const stored = await h.gateway.options.storage.listDevices(ANONYMOUS_OWNER);
    expect(stored.map((d) => d.device_id).sort()).toEqual(admitted.sort());
  });

  it("budgets - a large frame weighs one token more per 16 KiB, on the connection's budget and the owner's", async () => {
    let now = 1_000_000;
    // A stopped clock: no token comes back while the test runs, so the counts are exact.
    h = await startGateway({ now: () => now, rateLimitPerOwner: { perSecond: 20, burst: 62 } });
    const padding = "x".repeat(100_000); // 1 + 6 tokens a frame
    // A refused frame this large is answered without its id (docs/PROTOCOL.md §1).
    const big = async (c: Client, id: string) => {
      const from = c.frames.length;
      c.raw(JSON.stringify({ type: "ping", id, payload: { padding } }));
      return (await c.waitFor((f) => f.id === id || f.payload?.code === "rate_limited", 5000, from)).type;
    };
    const a = await Client.connect(h.url);
    open.push(a);
    // The connection's burst of 60, less its hello: eight of 7 tokens pass, the ninth does not.
    const answers: string[] = [];
    for (let i = 0; i < 9; i++) answers.push(await big(a, `a${i}`));
    expect(answers).toEqual([...Array(8).fill("pong"), "error"]);
    // Small frames still pass on what is left: the weight is the frame's, not a penalty.
    expect((await requests(a, 3)).answered).toBe(3);
    // The owner's budget (62, from after hello) is spent by weight too: the first connection
    // spent 59 of it, so a second one of the owner has not enough left for a large frame.
    const b = await Client.connect(h.url);
    open.push(b);
    expect(await big(b, "b0")).toBe("error");
    now += 1_000; // 20 of the owner's tokens come back
    expect(await big(b, "b1")).toBe("pong");
  });

  it("budgets - past its budget a connection stops reading for a while: a flood is read at the budget's pace, not the wire's", async () => {
    // No token ever comes back: each refusal pauses reading for the longest throttle, a second.
    h = await startGateway({ rateLimit: { perSecond: 0.001, burst: 20 } });
    const flood = await Client.connect(h.url);
    open.push(flood);
    const padding = "x".repeat(200_000); // 13 tokens a frame: the first passes, the others are refused
    for (let i = 0; i < 4; i++) flood.raw(JSON.stringify({ type: "ping", id: `f${i}`, payload: { padding } }));
    const answered = () => flood.frames.length - 1;
    // Within half a second the refused frames behind the first refusal have not even been read.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(answered()).toBeLessThan(4);
    // Another connection is answered at once meanwhile.
    const other = await Client.connect(h.url, { token: "" });
    open.push(other);
    expect((await other.request("ping", {})).type).toBe("pong");
    // Every frame is answered in the end, in order: nothing read is lost.
    await flood.waitFor(() => answered() === 4, 10_000);
    expect(flood.frames.slice(1).map((f) => f.type ?? f.payload?.code)).toEqual(["pong", "error", "error", "error"]);
  });

  /**
   * Eight connections of one owner, from one address, flood bad and valid frames; a ninth device
   * of the owner pings and sends messages between their floods. The clock is stopped but for the
   * steps the test takes, and each step the flooders go first, so before a shared budget was
   * divided they spent everything it earned before the quiet device asked for any of it.
   */
  async function floodAndQuiet(shared: "rateLimitPerOwner" | "rateLimitPerAddress") {
    let now = 1_000_000;
    const unbounded = { perSecond: 1e9, burst: 1e9 };
    const other = shared === "rateLimitPerOwner" ? "rateLimitPerAddress" : "rateLimitPerOwner";
    h = await startGateway({ now: () => now, [other]: unbounded });
    const quiet = await Client.connect(h.url, { device_id: "quiet" });
    open.push(quiet);
    const flooders: Client[] = [];
    for (let i = 0; i < 8; i++) flooders.push(await Client.connect(h.url, { device_id: `flooder-${i}` }));
    open.push(...flooders);
    let sent = 0;
    /** Each flooder writes `count` frames as fast as its socket takes them; resolves once all are answered. */
    const flood = (count: number) =>
      Promise.all(
        flooders.map((c) => {
          const ids = Array.from({ length: count }, () => `f${++sent}`);
          for (const [i, id] of ids.entries()) {
            c.raw(JSON.stringify(i % 2 ? { type: "channel.list", id } : { type: "no.such.frame", id, payload: 7 }));
          }
          return c.waitFor(() => ids.every((id) => c.frames.some((f) => f.id === id)), 30_000);
        }),
      );
    await flood(80); // past every burst: the shared budget is spent
    const answers: string[] = [];
    for (let i = 0; i < 20; i++) {
      now += 200;
      await flood(12);
      answers.push((await quiet.request("ping", { ts: i }, 30_000)).type);
      now += 200;
      await flood(12);
      const echo = await quiet.request("message.send", { chat_id: "default", text: `quiet ${i}` }, 30_000);
      answers.push(echo.type === "message" ? "message" : String(echo.payload.code));
    }
    expect(answers).toEqual(Array.from({ length: 20 }, () => ["pong", "message"]).flat());
    // The flooders are the ones refused, every one of them.
    for (const c of flooders)
      expect(c.frames.filter((f) => f.payload?.code === "rate_limited").length).toBeGreaterThan(100);
  }

  it("budgets - a flooding device spends its share of its owner's budget, never its owner's quiet device's", async () => {
    await floodAndQuiet("rateLimitPerOwner");
  }, 120_000);

  it("budgets - a flooding connection spends its share of its address's budget, never a quiet neighbour's", async () => {
    await floodAndQuiet("rateLimitPerAddress");
  }, 120_000);

  it("budgets - a small ping is answered past the frame budget; a connection that pings past its own rate is closed 4429", async () => {
    const now = 1_000_000;
    // A stopped clock: neither budget earns anything back while the test runs.
    h = await startGateway({ now: () => now, rateLimit: { perSecond: 1, burst: 6 } });
    const c = await Client.connect(h.url);
    open.push(c);
    expect(await requests(c, 8)).toEqual({ answered: 5, refused: 3 });
    for (let i = 0; i < 6; i++) expect((await c.request("ping", { ts: i })).payload).toEqual({ ts: i });
    c.send("ping", {}, "one-too-many");
    expect(await c.closedPromise).toBe(4429);
    expect(c.frames.at(-1)).toMatchObject({ type: "error", id: "one-too-many", payload: { code: "rate_limited" } });
  });
});
