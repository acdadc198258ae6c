// defineStorage(): what a storage implementation gets checked for, and what createGateway refuses.
import { describe, expect, it } from "vitest";
import { createGateway, defineStorage, memoryBus, type Bus, type Storage, type StorageImplementation } from "chat-gateway";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { memoryStorage } from "chat-gateway/storage/memory";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";

const runtime = { async *turn() {} };
/** A bus that reaches other processes, as far as the gateway can tell. */
const sharedBus: Bus = { publish() {}, subscribe: () => () => undefined };

/** The required core of a real storage, nothing more. */
function core(): StorageImplementation {
  const { commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice } = memoryStorage();
  return { commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice };
}

describe("defineStorage", () => {
  it("defineStorage - a missing core member is a TypeError that names it", () => {
    const { readOutbox: _dropped, ...rest } = core();
    expect(() => defineStorage(rest as StorageImplementation)).toThrow(TypeError);
    expect(() => defineStorage(rest as StorageImplementation)).toThrow(/the storage has no readOutbox\(\) method/);
    expect(() => createGateway({ storage: rest as StorageImplementation, runtime })).toThrow(/options\.storage: defineStorage: the storage has no readOutbox\(\)/);
  });

  it("defineStorage - media needs its three members together, and a declared capability needs its members", () => {
    const media = memoryStorage();
    expect(() => defineStorage({ ...core(), getMedia: media.getMedia, putMedia: media.putMedia })).toThrow(/media capability needs getMedia, putMedia, deleteMedia together; missing deleteMedia/);
    expect(() => defineStorage({ ...core(), capabilities: { search: true } })).toThrow(/capabilities\.search is declared but search is missing/);
    expect(() => defineStorage({ ...core(), capabilities: { fastSearch: true } as never })).toThrow(/unknown capability "fastSearch"/);
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
      uniqueClientMsgId: false,
    });
    for (const member of ["getChannel", "getDevice", "findByClientMsgId", "search", "pruneOutbox", "unfinishedMessages", "waitingTurns", "getMedia", "putMedia", "deleteMedia", "adoptOwner", "open", "close"] as const) {
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

describe("createGateway and storage capabilities", () => {
  it("capabilities - a media store needs the media capability; without a media store a core-only storage is fine", () => {
    expect(() => createGateway({ storage: core(), runtime, mediaStore: memoryMediaStore() })).toThrow(
      new TypeError("createGateway: options.mediaStore needs a storage with the media capability (getMedia, putMedia, deleteMedia): the gateway keeps each upload's owner, size, checksum and holding message there"),
    );
    expect(() => createGateway({ storage: core(), runtime })).not.toThrow();
    expect(() => createGateway({ storage: memoryStorage(), runtime, mediaStore: memoryMediaStore() })).not.toThrow();
  });

  it("capabilities - a bus shared with other processes needs uniqueClientMsgId, which PostgreSQL declares and the single-process storages do not", async () => {
    for (const storage of [memoryStorage(), sqlJsStorage({ dir: "/nonexistent/never-opened" }), defineStorage(core())]) {
      expect(storage.capabilities.uniqueClientMsgId).toBe(false);
      expect(() => createGateway({ storage, runtime, bus: sharedBus })).toThrow(/options\.bus shares this storage with other processes, which needs the uniqueClientMsgId capability/);
      expect(() => createGateway({ storage, runtime, bus: memoryBus() })).not.toThrow();
      expect(() => createGateway({ storage, runtime })).not.toThrow();
    }
    const postgres = postgresStorage({ connectionString: "postgres://nobody@127.0.0.1:1/never-connected" });
    expect(postgres.capabilities.uniqueClientMsgId).toBe(true);
    expect(() => createGateway({ storage: postgres, runtime, bus: sharedBus })).not.toThrow();
  });
});
