// Two gateways on one storage and one bus stand in for two processes: what must hold across them.
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, memoryBus, type LaneLock, type RuntimeEvent } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "./harness.js";
import { scriptedRuntime, sleep } from "./runtimes.js";

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

/** A lock shared by the gateways of this test, as Redis would be shared by processes. */
function sharedLock(): LaneLock {
  const tails = new Map<string, Promise<void>>();
  return {
    acquire(key, signal) {
      const previous = tails.get(key) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((r) => (release = r));
      tails.set(
        key,
        previous.then(() => mine),
      );
      return new Promise((resolve, reject) => {
        const onAbort = () => {
          // Gave up waiting: pass the turn on as soon as it comes.
          void previous.then(release);
          reject(signal.reason);
        };
        if (signal.aborted) return onAbort();
        signal.addEventListener("abort", onAbort, { once: true });
        void previous.then(() => {
          if (signal.aborted) return;
          signal.removeEventListener("abort", onAbort);
          resolve({ release: async () => release() });
        });
      });
    },
  };
}

function overlapRecorder() {
  let running = 0;
  let maxRunning = 0;
  const runtime = scriptedRuntime(async function* () {
    running++;
    maxRunning = Math.max(maxRunning, running);
    await sleep(60);
    running--;
    yield { type: "text", delta: "done" } as RuntimeEvent;
  });
  return { runtime, max: () => maxRunning };
}

describe("several gateways on one storage", () => {
  it("lane lock - turns of one lane never overlap across gateways", async () => {
    const storage = memoryStorage();
    const bus = memoryBus();
    const lock = sharedLock();
    const rec = overlapRecorder();
    const a = await startGateway({ storage, bus, laneLock: lock, runtime: rec.runtime });
    const b = await startGateway({ storage, bus, laneLock: lock, runtime: rec.runtime });
    open.push(a, b);
    const ca = await Client.connect(a.url);
    const cb = await Client.connect(b.url);
    await Promise.all([
      ca.request("message.send", { chat_id: "default", text: "1" }),
      cb.request("message.send", { chat_id: "default", text: "2" }),
    ]);
    await ca.waitFor(() => ca.of("message.stop").length === 2, 5000);
    expect(rec.max()).toBe(1);
    // both devices saw both answers through the shared bus
    await cb.waitFor(() => cb.of("message.stop").length === 2, 5000);
  });

  it("restart - a gateway starting does not mark another live gateway's running turn as interrupted", async () => {
    const storage = memoryStorage();
    const bus = memoryBus();
    const lock = sharedLock();
    let finish!: () => void;
    const held = new Promise<void>((r) => (finish = r));
    const a = await startGateway({
      storage,
      bus,
      laneLock: lock,
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "still going" } as RuntimeEvent;
        await held;
      }),
    });
    open.push(a);
    const ca = await Client.connect(a.url);
    await ca.request("message.send", { chat_id: "default", text: "long" });
    await ca.waitFor((f) => f.type === "message.start");
    await sleep(50);
    const b = await startGateway({ storage, bus, laneLock: lock });
    open.push(b);
    expect(ca.of("message.stop")).toEqual([]);
    finish();
    const stop = await ca.waitFor((f) => f.type === "message.stop");
    expect(stop.payload).toMatchObject({ status: "complete", final_text: "still going" });
  });

  it("restart - with a lane lock, a turn left open by a crashed process is closed as interrupted without a restart", async () => {
    const storage = memoryStorage();
    const lock = sharedLock();
    const b = await startGateway({ storage, laneLock: lock, recoveryIntervalMs: 100 });
    open.push(b);
    const cb = await Client.connect(b.url);
    // What a process killed mid-turn leaves behind: a streaming message whose lease has lapsed.
    await storage.commit(ANONYMOUS_OWNER, {
      messages: [
        {
          message_id: "m-crashed",
          role: "assistant",
          text: "half",
          reasoning: "",
          ts: 1,
          media: [],
          status: "streaming",
          chat_id: "default",
          thread_id: null,
        },
      ],
    });
    const stop = await cb.waitFor((f) => f.type === "message.stop", 3000);
    expect(stop.payload).toMatchObject({ message_id: "m-crashed", status: "interrupted", final_text: "half" });
  });

  it("lane lock - without it the same sends would overlap (the test can tell)", async () => {
    const storage = memoryStorage();
    const bus = memoryBus();
    const rec = overlapRecorder();
    const a = await startGateway({ storage, bus, runtime: rec.runtime });
    const b = await startGateway({ storage, bus, runtime: rec.runtime });
    open.push(a, b);
    const ca = await Client.connect(a.url);
    const cb = await Client.connect(b.url);
    await Promise.all([
      ca.request("message.send", { chat_id: "default", text: "1" }),
      cb.request("message.send", { chat_id: "default", text: "2" }),
    ]);
    await ca.waitFor(() => ca.of("message.stop").length === 2, 5000);
    expect(rec.max()).toBe(2);
  });

  it("delete - an answer deleted through another gateway while it streams stops, and is neither stored again nor ended after message.deleted", async () => {
    const storage = memoryStorage();
    const bus = memoryBus();
    let aborted = false;
    const runtime = scriptedRuntime(async function* (input) {
      try {
        for (let i = 0; i < 400 && !input.signal.aborted; i++) {
          yield { type: "text", delta: i === 0 ? "secret partial" : "." } as RuntimeEvent;
          await sleep(5);
        }
      } finally {
        // A stopped turn closes the iterator without pulling again, so only finally sees the end.
        aborted = input.signal.aborted;
      }
    });
    const a = await startGateway({ storage, bus, runtime, checkpointIntervalMs: 20 });
    const b = await startGateway({ storage, bus, runtime });
    open.push(a, b);
    const ca = await Client.connect(a.url);
    const cb = await Client.connect(b.url);
    await ca.request("message.send", { chat_id: "default", text: "go" });
    const id = (await cb.waitFor((f) => f.type === "message.start")).payload.message_id;
    await cb.waitFor((f) => f.type === "message.update");
    expect((await cb.request("message.delete", { chat_id: "default", message_ids: [id] })).type).toBe(
      "message.deleted",
    );
    // The turn runs on the other gateway: its next checkpoint finds the message gone and stops it.
    await ca.waitFor((f) => f.type === "typing" && f.payload.on === false, 1500);
    await sleep(50);
    expect(aborted).toBe(true);
    for (const c of [ca, cb]) expect(c.of("message.stop")).toEqual([]);
    expect(await storage.getMessage(ANONYMOUS_OWNER, id)).toBeUndefined();
    expect(JSON.stringify(await storage.readOutbox(ANONYMOUS_OWNER, 0, 100))).not.toContain("secret partial");
  });

  it("client_msg_id - a race between gateways stores one message when the storage enforces the key", async () => {
    const inner = memoryStorage();
    // A storage with a unique key on (owner, chat, client_msg_id), as the PostgreSQL storage has.
    let tail: Promise<unknown> = Promise.resolve();
    let rejected = 0;
    const storage: Storage = {
      ...inner,
      // Atomic check-and-write, and slow, so both gateways pass their own check before either writes.
      commit(owner, change) {
        const run = tail.then(() => sleep(30)).then(() => uniqueCommit(owner, change));
        tail = run.catch(() => undefined);
        return run;
      },
    };
    async function uniqueCommit(owner: string, change: Parameters<Storage["commit"]>[1]) {
      for (const m of change.messages ?? []) {
        if (m.client_msg_id !== undefined) {
          const existing = await inner.findByClientMsgId(owner, m.chat_id, m.client_msg_id);
          if (existing && existing.message_id !== m.message_id) {
            rejected++;
            throw new Error("duplicate key value violates unique constraint");
          }
        }
      }
      return inner.commit(owner, change);
    }
    const bus = memoryBus();
    const a = await startGateway({ storage, bus });
    const b = await startGateway({ storage, bus });
    open.push(a, b);
    const ca = await Client.connect(a.url);
    const cb = await Client.connect(b.url);
    const [x, y] = await Promise.all([
      ca.request("message.send", { chat_id: "default", text: "once", client_msg_id: "same" }),
      cb.request("message.send", { chat_id: "default", text: "once", client_msg_id: "same" }),
    ]);
    expect(x.type).toBe("message");
    expect(y.type).toBe("message");
    expect(x.payload.message_id).toBe(y.payload.message_id);
    await sleep(100);
    const users = (await ca.request("history", { chat_id: "default" })).payload.messages.filter(
      (m: any) => m.role === "user",
    );
    expect(users).toHaveLength(1);
    expect(rejected).toBe(1);
  });
});
