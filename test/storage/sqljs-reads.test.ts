// Reads of one owner with long messages, over the wire, on the sql.js storage in its own database
// process: a flood of `history`, `search`, made-up `picker.select` ids and `sync` from 0 neither
// ends the database process nor the gateway, costs another owner at most a read's wait, and a
// device that reads fast gets its whole sync (issue 27, items 1 and 4).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { tokenAuthenticator, type StoredMessage } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client, startGateway, type Frame, type Harness } from "../gateway/harness.js";
import { removeTempDirs, tempDir } from "./sqljs-helpers.js";

/** Messages of alice; each about 0.9 MiB, so the frames of a sync exceed the 16 MiB slow-consumer limit. */
const LONG = 24;
const LONG_CHARS = 900 * 1024;

function longText(i: number): string {
  // The searched word at the start, then filler words.
  return `needle ${i} ${`w${i}x `.repeat(Math.ceil(LONG_CHARS / `w${i}x `.length))}`;
}

function message(i: number, text: string): StoredMessage {
  return {
    message_id: `m${String(i).padStart(3, "0")}`,
    role: "user",
    text,
    reasoning: "",
    ts: 1_700_000_000_000 + i,
    media: [],
    chat_id: "default",
    thread_id: null,
  };
}

let storage: Storage;
let h: Harness;

beforeAll(async () => {
  const dir = await tempDir();
  const filling = sqlJsStorage({ dir });
  await filling.open();
  for (let i = 0; i < LONG; i++) {
    const m = message(i, longText(i));
    await filling.commit("alice", { messages: [m], outbox: [{ type: "message", payload: { ...m } }] });
  }
  const hello = message(0, "hello bob");
  await filling.commit("bob", { messages: [hello], outbox: [{ type: "message", payload: { ...hello } }] });
  await filling.close();
  // The gateway opens and closes the storage it is given.
  storage = sqlJsStorage({ dir });
  h = await startGateway({ storage, authenticator: tokenAuthenticator({ alice: "alice", bob: "bob" }) });
}, 300_000);

afterAll(async () => {
  await h?.close();
  await removeTempDirs();
});

/** Sends each request with an id and resolves with the id of each, in the order sent. */
function sendAll(client: Client, requests: Array<[string, Record<string, unknown>]>, prefix: string): string[] {
  return requests.map(([type, payload], i) => {
    const id = `${prefix}${i}`;
    client.send(type, payload, id);
    return id;
  });
}

describe("sql.js reads bounded in bytes", () => {
  test("storage - history and outbox pages end at LIMITS.storagePageBytes; paging on reads everything once", async () => {
    const page = (await storage.history("alice", { chat_id: "default", thread_id: null, limit: 200 }))!;
    expect(page.has_more).toBe(true);
    expect(page.messages.length).toBe(Math.ceil(LIMITS.storagePageBytes / LONG_CHARS));
    // The newest messages, oldest first.
    expect(page.messages.at(-1)!.message_id).toBe(message(LONG - 1, "").message_id);
    const seqs: number[] = [];
    for (let after = 0; ; ) {
      const entries = await storage.readOutbox("alice", after, 500);
      if (entries.length === 0) break;
      expect(entries.length).toBeLessThanOrEqual(Math.ceil(LIMITS.storagePageBytes / LONG_CHARS));
      seqs.push(...entries.map((e) => e.seq));
      after = entries.at(-1)!.seq;
    }
    expect(seqs).toEqual(Array.from({ length: LONG }, (_, i) => i + 1));
    // Frames of other types are skipped by their type.
    expect(await storage.readOutbox("alice", 0, 500, ["picker.resolved"])).toEqual([]);
  }, 120_000);

  test("storage - reads take turns per owner in the database process: another owner's read comes second, not after the flood", async () => {
    const order: string[] = [];
    // Sent in one tick, so they reach the database process together, alice's first.
    const flood = Array.from({ length: 4 }, (_, i) =>
      storage.history("alice", { chat_id: "default", thread_id: null, limit: 200 }).then(() => order.push(`alice${i}`)),
    );
    const other = storage
      .history("bob", { chat_id: "default", thread_id: null, limit: 1 })
      .then(() => order.push("bob"));
    await Promise.all([...flood, other]);
    expect(order).toEqual(["alice0", "bob", "alice1", "alice2", "alice3"]);
  }, 120_000);

  test("wire - a device that reads as fast as it can gets a whole sync of long messages, never 1013", async () => {
    const alice = await Client.connect(h.url, { token: "alice" });
    const done = await alice.request("sync", { cursor: 0 }, 120_000);
    expect(done).toMatchObject({ type: "sync.done", payload: { cursor: LONG } });
    expect(alice.frames.filter((f) => f.type === "message").map((f) => f.seq)).toEqual(
      Array.from({ length: LONG }, (_, i) => i + 1),
    );
    expect(alice.closeCode).toBeUndefined();
    await alice.close();
  }, 180_000);

  test("wire - one owner's flood of history, search, made-up picker ids and sync from 0: another owner is answered before the flood ends, and both processes live on", async () => {
    const alice = await Client.connect(h.url, { token: "alice" });
    const bob = await Client.connect(h.url, { token: "bob" });
    // Every frame either socket receives, in arrival order.
    const arrivals: string[] = [];
    alice.ws.on("message", (data, binary) => binary || arrivals.push(`alice:${JSON.parse(String(data)).id ?? ""}`));
    bob.ws.on("message", (data, binary) => binary || arrivals.push(`bob:${JSON.parse(String(data)).id ?? ""}`));
    const flood = sendAll(
      alice,
      [
        ...Array.from(
          { length: 6 },
          () => ["history", { chat_id: "default", limit: 200 }] as [string, Record<string, unknown>],
        ),
        ...Array.from(
          { length: 4 },
          () => ["search", { query: "needle", scope: "all", limit: 100 }] as [string, Record<string, unknown>],
        ),
        ...Array.from(
          { length: 2 },
          (_, i) =>
            ["picker.select", { picker_id: `pk0_madeupid00${i}`, option_id: "yes" }] as [
              string,
              Record<string, unknown>,
            ],
        ),
        ["sync", { cursor: 0 }],
      ],
      "flood",
    );
    const other = bob.request("history", { chat_id: "default", limit: 1 }, 120_000);
    const answers: Frame[] = [];
    for (const id of flood) answers.push(await alice.waitFor((f) => f.id === id, 180_000));
    const bobs = await other;

    expect(bobs).toMatchObject({ type: "history", payload: { messages: [{ text: "hello bob" }] } });
    const lastOfFlood = Math.max(...flood.map((id) => arrivals.indexOf(`alice:${id}`)));
    expect(arrivals.indexOf(`bob:${bobs.id}`)).toBeLessThan(lastOfFlood);

    const types = answers.map((f) => f.type);
    expect(types).toEqual([
      ...Array(6).fill("history"),
      ...Array(4).fill("search.results"),
      "error",
      "error",
      "sync.done",
    ]);
    for (const f of answers.slice(0, 6)) expect(f.payload.has_more).toBe(true);
    for (const f of answers.slice(6, 10)) expect(f.payload.hits).toHaveLength(LONG);
    expect(answers.slice(10, 12).map((f) => f.payload.code)).toEqual(["not_found", "not_found"]);
    expect(answers[12].payload.cursor).toBe(LONG);
    expect(alice.closeCode).toBeUndefined();

    // The database process and the gateway still serve both owners.
    expect((await bob.request("history", { chat_id: "default", limit: 1 })).payload.messages).toHaveLength(1);
    expect((await alice.request("search", { query: `needle`, scope: "all", limit: 1 })).payload.hits).toHaveLength(1);
    await alice.close();
    await bob.close();
  }, 300_000);
});
