// defineStorage(): what a storage implementation gets checked for, and what createGateway refuses.
import { describe, expect, it } from "vitest";
import * as root from "chat-gateway";
import { createGateway, memoryBus, type Bus } from "chat-gateway";
import type { Change, Storage, StorageImplementation } from "chat-gateway/storage";
import { defineStorage } from "chat-gateway/storage";
import { isGatewayError } from "chat-gateway/protocol";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { memoryStorage } from "chat-gateway/storage/memory";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";

const runtime = { async *turn() {} };
/** A bus that reaches other processes, as far as the gateway can tell. */
const sharedBus: Bus = { publish() {}, subscribe: () => () => undefined };

/** The required core of a real storage, nothing more. */
function core(): StorageImplementation {
  const { commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice } =
    memoryStorage();
  return { commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice };
}

describe("defineStorage", () => {
  it("defineStorage - a missing core member is a TypeError that names it", () => {
    const { readOutbox: _dropped, ...rest } = core();
    expect(() => defineStorage(rest as StorageImplementation)).toThrow(TypeError);
    expect(() => defineStorage(rest as StorageImplementation)).toThrow(/the storage has no readOutbox\(\) method/);
    expect(() => createGateway({ storage: rest as StorageImplementation, runtime })).toThrow(
      /options\.storage: defineStorage: the storage has no readOutbox\(\)/,
    );
  });

  it("defineStorage - media needs its three members together, and a declared capability needs its members", () => {
    const media = memoryStorage();
    expect(() => defineStorage({ ...core(), getMedia: media.getMedia, putMedia: media.putMedia })).toThrow(
      /media capability needs getMedia, putMedia, deleteMedia together; missing deleteMedia/,
    );
    expect(() => defineStorage({ ...core(), capabilities: { search: true } })).toThrow(
      /capabilities\.search is declared but search is missing/,
    );
    expect(() => defineStorage({ ...core(), capabilities: { fastSearch: true } as never })).toThrow(
      /unknown capability "fastSearch"/,
    );
    // Webhooks and schedules are contracts of their own (HookStore, ScheduleStore), no storage capability.
    for (const name of ["hooks", "schedules"])
      expect(() => defineStorage({ ...core(), capabilities: { [name]: true } as never })).toThrow(
        new RegExp(`unknown capability "${name}"`),
      );
  });

  it("defineStorage - fills in what is missing and reports what is native; defining again returns the same storage", () => {
    const storage = defineStorage(core());
    expect(storage.capabilities).toEqual({
      getChannel: false,
      getDevice: false,
      findByClientMsgId: false,
      search: false,
      pruneOutbox: false,
      unfinishedMessages: false,
      waitingTurns: false,
      media: false,
      adoptOwner: false,
      readState: false,
      uniqueClientMsgId: false,
      fencing: false,
    });
    for (const member of [
      "getChannel",
      "getDevice",
      "findByClientMsgId",
      "search",
      "pruneOutbox",
      "unfinishedMessages",
      "waitingTurns",
      "getMedia",
      "putMedia",
      "deleteMedia",
      "adoptOwner",
      "open",
      "close",
    ] as const) {
      expect(typeof storage[member], member).toBe("function");
    }
    expect(defineStorage(storage)).toBe(storage);
    expect(Object.values(memoryStorage().capabilities).filter((native) => !native)).toHaveLength(1);
  });

  it("defineStorage - a class instance keeps its private state", async () => {
    class Counting implements StorageImplementation {
      readonly #inner = core();
      #commits = 0;
      commit: Storage["commit"] = (owner, change) => {
        this.#commits++;
        return this.#inner.commit(owner, change);
      };
      getMessage: Storage["getMessage"] = (o, id) => this.#inner.getMessage(o, id);
      history: Storage["history"] = (o, q) => this.#inner.history(o, q);
      listChannels: Storage["listChannels"] = (o) => this.#inner.listChannels(o);
      readOutbox: Storage["readOutbox"] = (o, a, l) => this.#inner.readOutbox(o, a, l);
      async outboxBounds(owner: string) {
        return { ...(await this.#inner.outboxBounds(owner)), last: this.#commits };
      }
      listDevices: Storage["listDevices"] = (o) => this.#inner.listDevices(o);
      putDevice: Storage["putDevice"] = (o, d) => this.#inner.putDevice(o, d);
    }
    const storage = defineStorage(new Counting());
    await storage.commit("a", { outbox: [{ type: "x", payload: {} }] });
    expect((await storage.outboxBounds("a")).last).toBe(1);
  });
});

describe("defineStorage - the core's part of the data contract", () => {
  it("data contract - every outbox frame reaches the implementation with the redaction key the core computed", async () => {
    const seen: Change[] = [];
    const storage = defineStorage({
      ...core(),
      commit: async (_owner, change) => {
        seen.push(change);
        return { seqs: [], orphanedMedia: [] };
      },
    });
    await storage.commit("a", {
      outbox: [
        { type: "message", payload: { message_id: "m1", chat_id: "c1", thread_id: null, text: "hi" } },
        { type: "media.offer", payload: { message_id: "m2", media_id: "x" } },
        { type: "channel.created", payload: { chat_id: "c1", name: "one" } },
        { type: "channel.renamed", payload: { chat_id: "c1", thread_id: "t1", name: "a thread" } },
        { type: "notification", payload: { chat_id: "c1", text: "about the lane" } },
        { type: "notification", payload: { text: "about no lane" } },
        { type: "message.deleted", payload: { chat_id: "c1", thread_id: null, message_ids: ["m1"] } },
        { type: "channel.deleted", payload: { chat_id: "c1" } },
      ],
    });
    expect(seen[0].outbox!.map((f) => f.redactKey)).toEqual(["m:m1", "m:m2", "c:c1", "c:t1", "c:c1", null, null, null]);
    // The deletion notices keep ids only: a replay after the deletion still hands them out.
    expect(seen[0].outbox![6]).toEqual({
      type: "message.deleted",
      payload: { chat_id: "c1", thread_id: null, message_ids: ["m1"] },
      redactKey: null,
    });
  });

  it("data contract - an implementation that answers mediaTaken makes commit reject with the unsupported error clients get", async () => {
    const storage = defineStorage({
      ...core(),
      commit: async () => ({ seqs: [], orphanedMedia: [], mediaTaken: "up1" }),
    });
    const refused = await storage
      .commit("a", { outbox: [{ type: "message", payload: { message_id: "m1" } }] })
      .catch((error: unknown) => error);
    expect(isGatewayError(refused)).toBe(true);
    expect(refused).toMatchObject({
      code: "unsupported",
      message:
        'media_ref "up1" is already attached to a message: each upload goes with one message (media_refs come from media.upload.ack); upload the file again',
    });
  });

  it("data contract - adoptOwner: a refusal answered as data becomes an unsupported error, and an owner adopting itself never reaches the implementation", async () => {
    const asked: Array<[string, string]> = [];
    const counts = { channels: 1, messages: 2, outbox: 3, devices: 0, media: 0 };
    const storage = defineStorage({
      ...core(),
      adoptOwner: async (from, to) => {
        asked.push([from, to]);
        return to === "busy" ? { refused: "target_has_data" as const } : counts;
      },
    });
    expect(storage.capabilities.adoptOwner).toBe(true);
    await expect(storage.adoptOwner("anon", "alice")).resolves.toEqual(counts);
    await expect(storage.adoptOwner("anon", "busy")).rejects.toMatchObject({
      code: "unsupported",
      message: "busy already has data of its own: adopting would mix two owners' chats and seqs, so nothing was moved",
    });
    await expect(storage.adoptOwner("alice", "alice")).rejects.toMatchObject({
      code: "unsupported",
      message: "alice cannot adopt its own data",
    });
    expect(asked).toEqual([
      ["anon", "alice"],
      ["anon", "busy"],
    ]);
  });

  it("data contract - the root entry no longer exports the helpers storages had to call", () => {
    for (const name of [
      "outboxRedactionKey",
      "messageRedactionKey",
      "channelRedactionKey",
      "heldByAnother",
      "mediaTakenError",
      "checkAdoption",
      "adoptionRefusedError",
      "NOTHING_ADOPTED",
    ]) {
      expect(root, name).not.toHaveProperty(name);
    }
  });
});

describe("createGateway and storage capabilities", () => {
  it("capabilities - a media store needs the media capability; without a media store a core-only storage is fine", () => {
    expect(() => createGateway({ storage: core(), runtime, mediaStore: memoryMediaStore() })).toThrow(
      new TypeError(
        "createGateway: options.mediaStore needs a storage with the media capability (getMedia, putMedia, deleteMedia): the gateway keeps each upload's owner, size, checksum and holding message there",
      ),
    );
    expect(() => createGateway({ storage: core(), runtime })).not.toThrow();
    expect(() => createGateway({ storage: memoryStorage(), runtime, mediaStore: memoryMediaStore() })).not.toThrow();
  });

  it("capabilities - a bus shared with other processes needs uniqueClientMsgId, which PostgreSQL declares and the single-process storages do not", async () => {
    for (const storage of [
      memoryStorage(),
      sqlJsStorage({ dir: "/nonexistent/never-opened" }),
      defineStorage(core()),
    ]) {
      expect(storage.capabilities.uniqueClientMsgId).toBe(false);
      expect(() => createGateway({ storage, runtime, bus: sharedBus })).toThrow(
        /options\.bus shares this storage with other processes, which needs the uniqueClientMsgId capability/,
      );
      expect(() => createGateway({ storage, runtime, bus: memoryBus() })).not.toThrow();
      expect(() => createGateway({ storage, runtime })).not.toThrow();
    }
    const postgres = postgresStorage({ connectionString: "postgres://nobody@127.0.0.1:1/never-connected" });
    expect(postgres.capabilities.uniqueClientMsgId).toBe(true);
    expect(() => createGateway({ storage: postgres, runtime, bus: sharedBus })).not.toThrow();
  });
});
