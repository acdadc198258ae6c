// Invariants under concurrency, through the wire, with many devices of one owner at once on each
// storage: one default channel after 60 first hellos and after 20 `channel.set_default`s, one
// message per `client_msg_id`, and device push targets kept. On PostgreSQL the devices are split
// between two gateways with a storage each on one schema, as two processes would be (the device
// test stays on one: its writes are ordered per process).
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { defineStorage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

interface Setup {
  /** One storage per gateway, all on the same data. */
  storages(): Promise<Storage[]>;
  cleanup(): Promise<void>;
}

const schemas: string[] = [];
const setups: Array<[string, Setup]> = [
  ["memory", { storages: async () => [memoryStorage()], cleanup: async () => undefined }],
  ["sql.js", { storages: async () => [sqlJsStorage({ dir: await tempDir() })], cleanup: removeTempDirs }],
];
if (await postgresAvailable("concurrency through the wire")) {
  setups.push([
    "PostgreSQL, two gateways",
    {
      async storages() {
        const schema = `t_${runId()}`;
        schemas.push(schema);
        return [
          postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 }),
          postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 }),
        ];
      },
      cleanup: async () => {
        for (const schema of schemas.splice(0)) await dropSchema(schema);
      },
    },
  ]);
}

let gateways: Harness[] = [];
let clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  for (const h of gateways) await h.close();
  clients = [];
  gateways = [];
});
afterAll(async () => {
  for (const [, setup] of setups) await setup.cleanup();
});

let storages: Storage[] = [];

async function start(setup: Setup): Promise<string[]> {
  storages = await setup.storages();
  for (const storage of storages)
    gateways.push(await startGateway({ storage, maxConnectionsPerOwner: 100, maxConnectionsPerIp: 200 }));
  return gateways.map((h) => h.url);
}

/** `count` devices of one new owner, connecting and saying hello all at once, spread over the gateways. */
async function connectAtOnce(urls: string[], count: number): Promise<Client[]> {
  const connected = await Promise.all(
    Array.from({ length: count }, (_, i) => Client.connect(urls[i % urls.length], { device_id: `race-${i}` })),
  );
  clients.push(...connected);
  return connected;
}

/** The channels a device holds after replaying the owner's stored frames from the start. */
async function replayedChannels(url: string): Promise<Map<string, Record<string, any>>> {
  const [replayer] = await connectAtOnce([url], 1);
  const done = await replayer.request("sync", { cursor: 0 }, 20_000);
  expect(done.type).toBe("sync.done");
  const held = new Map<string, Record<string, any>>();
  for (const frame of replayer.frames
    .filter((f): f is Frame & { seq: number } => f.seq !== undefined)
    .sort((a, b) => a.seq - b.seq)) {
    if (frame.type === "channel.created" || frame.type === "channel.renamed")
      held.set(frame.payload.chat_id, frame.payload);
  }
  return held;
}

describe.each(setups)("one default channel under concurrency (%s)", (_name, setup) => {
  test("60 first hellos of a new owner at once: the owner has exactly one default channel, the General one", async () => {
    const urls = await start(setup);
    const devices = await connectAtOnce(urls, 60);
    for (const device of devices.slice(0, urls.length)) {
      const channels = (await device.request("channel.list", {})).payload.channels as Array<Record<string, any>>;
      expect(channels.map((c) => [c.chat_id, c.kind, c.is_default])).toEqual([["default", "default", true]]);
    }
  }, 60_000);

  test("20 channel.set_default at once, each to its own channel: exactly one default afterwards, and the stored frames replay to the same", async () => {
    const urls = await start(setup);
    const devices = await connectAtOnce(urls, 20);
    const made: string[] = [];
    for (let i = 0; i < 20; i++)
      made.push((await devices[0].request("channel.create", { name: `c${i}`, kind: "channel" })).payload.chat_id);
    const answers = await Promise.all(
      devices.map((device, i) => device.request("channel.set_default", { chat_id: made[i] }, 30_000)),
    );
    for (const [i, answer] of answers.entries())
      expect(answer.payload).toMatchObject({ chat_id: made[i], is_default: true });
    const listed = (await devices[0].request("channel.list", {})).payload.channels as Array<Record<string, any>>;
    const defaults = listed.filter((c) => c.is_default);
    expect(defaults).toHaveLength(1);
    const replayed = [...(await replayedChannels(urls[0])).values()].filter((c) => c.is_default);
    expect(replayed.map((c) => c.chat_id)).toEqual([defaults[0].chat_id]);
  }, 60_000);
});

describe.each(setups)("one message per client_msg_id under concurrency (%s)", (_name, setup) => {
  test("20 sends of one client_msg_id at once, from devices of one owner: every answer is the same stored message, and one answer is stored", async () => {
    const urls = await start(setup);
    const devices = await connectAtOnce(urls, 20);
    const echoes = await Promise.all(
      devices.map((device) =>
        device.request("message.send", { chat_id: "default", text: "once", client_msg_id: "same-key" }, 30_000),
      ),
    );
    expect(new Set(echoes.map((e) => e.payload.message_id)).size).toBe(1);
    const history = await devices[0].request("history", { chat_id: "default", limit: 50 }, 20_000);
    const users = (history.payload.messages as Array<Record<string, any>>).filter((m) => m.role === "user");
    expect(users.map((m) => m.message_id)).toEqual([echoes[0].payload.message_id]);
  }, 60_000);
});

describe.each(setups)("device records under concurrency (%s)", (_name, setup) => {
  test("20 hellos of one device at once, one of them with a push target, and two connections registering one target each: every target is kept", async () => {
    const [url] = await start(setup);
    const hellos = Array.from({ length: 20 }, (_, i) =>
      Client.connect(url, { device_id: "phone", ...(i === 7 ? { ntfy_topic: "topic-7" } : {}) }),
    );
    clients.push(...(await Promise.all(hellos)));
    expect(await storages[0].getDevice(ANONYMOUS_OWNER, "phone")).toMatchObject({ ntfy_topic: "topic-7" });
    const [a, b] = clients;
    a.send("fcm.register", { fcm_token: "token-a" });
    b.send("fcm.register", { ntfy_topic: "topic-b" });
    // A connection's frames are handled in order: once these answer, the registrations are stored.
    await Promise.all([a.request("channel.list", {}), b.request("channel.list", {})]);
    expect(await storages[0].getDevice(ANONYMOUS_OWNER, "phone")).toMatchObject({
      fcm_token: "token-a",
      ntfy_topic: "topic-b",
    });
  }, 60_000);
});

describe("a storage that changes channels on the way out", () => {
  test("channel.set_default answers internal after its attempts, instead of retrying for ever", async () => {
    const inner = memoryStorage();
    // Every read changes the name, so a channel is never found stored as it was read.
    const getChannel: Storage["getChannel"] = async (owner, chatId) => {
      const found = await inner.getChannel(owner, chatId);
      return found && { ...found, name: `${found.name} (read)` };
    };
    const storage = defineStorage({ ...inner, getChannel });
    gateways.push(await startGateway({ storage }));
    const [device] = await connectAtOnce([gateways[0].url], 1);
    const made = await device.request("channel.create", { name: "other", kind: "channel" });
    const answer = await device.request("channel.set_default", { chat_id: made.payload.chat_id }, 20_000);
    expect(answer).toMatchObject({ type: "error", payload: { code: "internal" } });
    expect((await inner.listChannels(ANONYMOUS_OWNER)).filter((c) => c.is_default).map((c) => c.chat_id)).toEqual([
      "default",
    ]);
  });
});

/**
 * Waits until the deleting device has the `channel.deleted` of each thread: threads that were
 * stored while the deletion ran are deleted just after it (on the deleter's gateway).
 */
async function deletedOnce(deleter: Client, threadIds: string[]): Promise<void> {
  for (const id of threadIds)
    await deleter.waitFor((f) => f.type === "channel.deleted" && f.payload.chat_id === id, 20_000);
}

describe.each(setups)("threads racing their channel's deletion (%s)", (_name, setup) => {
  test("a channel deleted while 20 threads are created in it leaves no thread behind, and each creation is answered channel.created or not_found", async () => {
    const urls = await start(setup);
    const devices = await connectAtOnce(urls, 21);
    const parent = (await devices[0].request("channel.create", { name: "doomed", kind: "channel" })).payload.chat_id;
    const [deleted, ...created] = await Promise.all([
      devices[20].request("channel.delete", { chat_id: parent }, 30_000),
      ...devices
        .slice(0, 20)
        .map((device, i) =>
          device.request("channel.create", { name: `t${i}`, kind: "thread", parent_chat_id: parent }, 30_000),
        ),
    ]);
    expect(deleted.type).toBe("channel.deleted");
    for (const answer of created)
      expect(answer.type === "channel.created" || answer.payload.code === "not_found").toBe(true);
    await deletedOnce(
      devices[20],
      created.filter((a) => a.type === "channel.created").map((a) => a.payload.chat_id),
    );
    for (const url of urls) {
      const [reader] = await connectAtOnce([url], 1);
      const channels = (await reader.request("channel.list", {})).payload.channels as Array<Record<string, any>>;
      expect(channels.filter((c) => c.chat_id === parent || c.parent_chat_id === parent)).toEqual([]);
    }
  }, 60_000);
});

describe.each(setups)("messages racing their channel's deletion (%s)", (_name, setup) => {
  test("a channel deleted while 12 messages are sent into it keeps none of them nor their threads: each send is answered message or not_found", async () => {
    const urls = await start(setup);
    const devices = await connectAtOnce(urls, 13);
    const doomed = (await devices[0].request("channel.create", { name: "doomed", kind: "channel" })).payload.chat_id;
    const [deleted, ...sent] = await Promise.all([
      devices[12].request("channel.delete", { chat_id: doomed }, 30_000),
      ...devices
        .slice(0, 12)
        .map((device, i) =>
          device.request(
            "message.send",
            { chat_id: doomed, text: `racing words ${i}`, auto_thread: i % 2 === 0 },
            30_000,
          ),
        ),
    ]);
    expect(deleted.type).toBe("channel.deleted");
    for (const answer of sent) expect(answer.type === "message" || answer.payload.code === "not_found").toBe(true);
    await deletedOnce(
      devices[12],
      sent.filter((a) => a.type === "message" && a.payload.thread_id).map((a) => a.payload.thread_id),
    );
    for (const storage of storages) {
      // The user's messages; an answer's placeholder from a turn that started just before the
      // deletion is the turn's to keep out (not checked here).
      const kept =
        (await storage.history(ANONYMOUS_OWNER, { chat_id: doomed, thread_id: null, limit: 100 }))?.messages ?? [];
      expect(kept.filter((m) => m.role === "user")).toEqual([]);
      expect(
        (await storage.search(ANONYMOUS_OWNER, { query: "racing", scope: "all", limit: 50 })).filter(
          (h) => h.role === "user",
        ),
      ).toEqual([]);
      expect(
        (await storage.listChannels(ANONYMOUS_OWNER)).filter(
          (c) => c.chat_id === doomed || c.parent_chat_id === doomed,
        ),
      ).toEqual([]);
    }
  }, 60_000);
});
