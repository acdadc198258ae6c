// A connection stops reading its socket for two reasons that can hold at once (docs/PROTOCOL.md
// §2.4): binary messages waiting past their bound (here, upload chunks a slow media store has not
// taken yet), and a moment after a frame refused for the budget. It reads again once neither
// holds it, and then it does: never while one still holds, never stuck after both let go.
import { afterEach, describe, expect, it } from "vitest";
import type { MediaStore } from "chat-gateway";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { encodeChunk } from "chat-gateway/protocol";
import { until } from "../../adapters/testing/wait.js";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { gate, sleep } from "./runtimes.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** More upload chunks than the 1,024 binary messages a connection queues before it stops reading. */
const CHUNKS = 1_100;
/** The longest pause after a refused frame (docs/PROTOCOL.md §2.4: at most a second). */
const THROTTLE_MAX_MS = 1_000;

/** A media store whose writes wait until `release()`: upload chunks pile up in the connection meanwhile. */
function slowMediaStore() {
  const inner = memoryMediaStore();
  const open = gate();
  let written = 0;
  const store: MediaStore = {
    async createWriter(owner, mediaId) {
      const writer = await inner.createWriter(owner, mediaId);
      return {
        async write(chunk) {
          await open.wait;
          await writer.write(chunk);
          written++;
        },
        commit: () => writer.commit(),
        abort: () => writer.abort(),
      };
    },
    read: (owner, mediaId) => inner.read(owner, mediaId),
    delete: (owner, mediaIds) => inner.delete(owner, mediaIds),
  };
  return { store, release: open.release, written: () => written };
}

/**
 * A device whose frame budget is spent (hello and media.upload.start take both tokens, and it
 * earns no more while the test runs) holding both reasons at once: its upload's chunks wait for
 * the store past the backlog's bound, and the request sent right behind them, read from the same
 * batch of bytes, is refused for the budget. Resolves once that refusal has arrived.
 */
async function holdBoth(store: MediaStore): Promise<Client> {
  h = await startGateway({ mediaStore: store, rateLimit: { perSecond: 0.001, burst: 2 } });
  const c = await Client.connect(h.url);
  c.send(
    "media.upload.start",
    {
      media_ref: "m",
      kind: "image",
      mime: "image/png",
      size: CHUNKS,
      filename: "m.png",
    },
    "up",
  );
  // One write: the request is already read when the chunks before it stop the reading.
  const socket = (c.ws as any)._socket;
  socket.cork();
  for (let at = 0; at < CHUNKS; at++) c.raw(Buffer.from(encodeChunk("m", at, new Uint8Array([at % 256]))));
  c.send("channel.list", {}, "refused");
  socket.uncork();
  const refused = await c.waitFor((f) => f.id === "refused", 10_000);
  expect(refused).toMatchObject({ type: "error", payload: { code: "rate_limited" } });
  return c;
}

/** The refusal of a frame: it comes the moment the frame is read, as the budget is still spent. */
const isRefusal = (id: string) => (f: Frame) => f.id === id && f.payload.code === "rate_limited";

describe("reading paused for two reasons at once", () => {
  it("read pause - the refusal's pause ends first: the socket stays paused until the chunks are worked off, then reads again", async () => {
    const slow = slowMediaStore();
    const c = await holdBoth(slow.store);
    c.send("channel.list", {}, "probe");
    // Past the refusal's pause: only the chunks waiting for the store hold the socket now.
    await sleep(THROTTLE_MAX_MS + 500);
    const order: string[] = [];
    if (c.frames.some(isRefusal("probe"))) order.push("probe read");
    order.push("store released");
    slow.release();
    await c.waitFor(isRefusal("probe"), 10_000);
    order.push("probe read");
    expect(order).toEqual(["store released", "probe read"]);
    // Nothing was lost while the socket waited: every chunk reaches the store.
    await until(() => slow.written() === CHUNKS, "every chunk written", 10_000);
    expect(c.closeCode).toBeUndefined();
  });

  it("read pause - the chunks are worked off first: the socket reads again once the refusal's pause ends", async () => {
    const slow = slowMediaStore();
    const c = await holdBoth(slow.store);
    c.send("channel.list", {}, "probe");
    slow.release();
    await until(() => slow.written() === CHUNKS, "every chunk written", 10_000);
    expect(await c.waitFor(isRefusal("probe"), 10_000)).toMatchObject({ type: "error", id: "probe" });
    expect(c.closeCode).toBeUndefined();
  });
});
