// The storage conformance suite, split by area: this file holds the harness and the record-level
// guarantees of the required core; commit, lanes (outbox, history), deletion, search, media and the
// other capabilities each have a file of their own.
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { Storage, StorageCapabilities, StorageImplementation } from "chat-gateway/storage";
import { defineStorage } from "chat-gateway/storage";
import { describeAdoptionConformance } from "./storage-adoption.js";
import { describeCapabilitiesConformance } from "./storage-capabilities.js";
import { describeConcurrencyConformance } from "./storage-concurrency.js";
import { describeDevices } from "./storage-devices.js";
import { describeDurabilityConformance } from "./storage-durability.js";
import { describeCommitAtomicity, describeCommitWrites } from "./storage-commit.js";
import { describeDeletionConformance, describeRecordDeletion } from "./storage-deletion.js";
import { describeLanesConformance } from "./storage-lanes.js";
import { describeFencingConformance } from "./storage-fencing.js";
import { describeAutomationAdoption, isAutomationStorage, type AutomationStorage } from "./storage-automation.js";
import { describeMediaConformance } from "./storage-media.js";
import { describeReadStateConformance } from "./storage-read-state.js";
import { A, B, channel, device, ids, mediaRef, msg, thread } from "./storage-records.js";
import { describeSearchConformance } from "./storage-search.js";

/** A storage under test with the clean-up to run after the test (drop a schema, remove a folder). */
export interface StorageUnderTest {
  /** A storage, or an implementation the suite passes through `defineStorage()`. */
  storage: Storage | StorageImplementation;
  /** Runs after `storage.close()`, once per test. */
  cleanup?: () => Promise<void>;
  /**
   * A second instance on the same data, as another process would open it (PostgreSQL: another
   * storage on the same schema). The concurrency tests send half their calls through it. The suite
   * opens and closes it; without it, every call goes to `storage`.
   */
  peer?: Storage | StorageImplementation;
  /**
   * Makes a new instance on the same data, not yet opened; the durability test calls it after
   * closing `storage`, and closes what it returns. Required with `{ persists: true }`.
   */
  reopen?: () => Storage | StorageImplementation;
}

/** Options of {@link describeStorageConformance}. */
export interface StorageConformanceOptions {
  /**
   * The storage keeps its data across a close and a new instance (a file, a database): the suite
   * then checks that everything written is read back by the factory's `reopen` (see
   * {@link StorageUnderTest.reopen}). Default false (an in-memory storage).
   */
  persists?: boolean;
}

/**
 * Makes the storage for one test: called once before every test, it must return a fresh, EMPTY
 * storage that shares no state with the ones it made before (a new folder, a new schema, a new
 * in-memory instance), not yet opened: the suite calls `open()` before the test and `close()` after
 * it. Return the storage itself, or a {@link StorageUnderTest} when something must be cleaned up.
 */
export type StorageFactory = () =>
  | Storage
  | StorageImplementation
  | StorageUnderTest
  | Promise<Storage | StorageImplementation | StorageUnderTest>;

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link Storage} contract
 * for one implementation, inside a `describe("storage conformance: <name>")` block. Call it at the
 * top level of a test file:
 *
 * ```ts
 * import { describeStorageConformance } from "chat-gateway/testing";
 * import { myStorage } from "./my-storage.js";
 * describeStorageConformance("my storage", () => myStorage());
 * ```
 *
 * The suite calls `make()` once more while it declares its tests, to read which capabilities the
 * storage declares (see `StorageCapabilities`); it never opens that storage, and runs its
 * `cleanup`. It then checks the required core always, and each capability's guarantees when the
 * storage declares it or the core's fallback when it does not: the describe blocks say which,
 * e.g. `search (capability)` or `search (core fallback)`. As behind a gateway, messages are
 * written to lanes whose channels are stored.
 *
 * What it checks, each for two owners whose ids collide, so nothing may cross between them:
 * - records: channels, threads, messages, devices and media metadata round-trip every field, and
 *   mutating what was passed in or returned leaves the stored state alone;
 * - `commit` atomicity and ordering: a change that cannot be stored rejects and leaves nothing
 *   behind, `requireMessages` applies a change only while those messages exist, upserts apply
 *   before deletions and the outbox last, and calls for one owner apply in call order;
 * - the outbox: seqs start at 1 and grow by one without gaps and are never reused, reads return
 *   frames after the cursor in seq order; with `pruneOutbox`, pruning by count or age keeps the
 *   newest frames (without it, everything is kept);
 * - history: pages come oldest first with `has_more`, `before` cursors walk 1,000 messages that
 *   share timestamps with no gap and no repeat, the flat lane, each thread and each channel are
 *   separate;
 * - search: word prefixes match case- and diacritic-insensitively, query syntax is searched as
 *   plain words, hits are ranked (more matched words, then more occurrences, then newest), at most
 *   `limit`, scoped to a chat or thread when asked, with snippets of at most 200 characters;
 * - deletion and redaction: deleting messages or channels takes their messages and redacts the
 *   stored outbox frames that showed them; with `media`, it reports the media they held and
 *   forgets its metadata, and media attached to one message cannot be attached to another
 *   (without it, `createGateway` refuses a media store);
 * - `findByClientMsgId`, `unfinishedMessages` (streaming assistant messages of every owner or of
 *   one lane, or none through the fallback), `waitingTurns` (the durable turn queue: waiting user
 *   messages oldest first, cleared by `Change.answered` in the same commit, never re-inserted), and
 *   `uniqueClientMsgId` (a second message with a chat's key is refused; without it, `createGateway`
 *   refuses a bus shared with other processes);
 * - `readState`: one watermark per lane, moved only forward by `(ts, message_id)` and atomically
 *   with its change (a read that does not move it applies nothing), forgotten with its channel,
 *   moved by `adoptOwner`; unread counts of assistant messages per lane, stopping at the cap
 *   (without it: no watermark, no count);
 * - `adoptOwner`: one owner's data moves whole to an owner without data, is refused into one with
 *   data (nothing moved), and moves nothing the second time; without it, the call is refused;
 * - concurrency: many calls at once on one owner, half through the `peer` when given, for each
 *   invariant the gateway keeps through the storage: one default channel made on first use, one
 *   default after concurrent `set_default`s, updates and deletes of one channel (`expectChannels`),
 *   saves racing deletes (`requireMessages`), messages racing their channel's deletion
 *   (`requireChannels`), devices, one message per `client_msg_id`, read watermarks that never move
 *   back however reads race, and
 *   adoption racing the first write of its target;
 * - fencing (docs/PROTOCOL.md §4.2): `Change.requireStreaming` ends an answer once, also with
 *   many finals at once; with `fencing`, `Change.takeLane` gives each lane growing tokens, one
 *   per take however many race, and a write with a token the lane has moved past applies
 *   nothing (without it, `createGateway` refuses a lane lock);
 * - with `{ persists: true }`: everything written is read back by a new instance after a close.
 *
 * @param name Shown in the test names, e.g. `"postgres"`.
 * @param make Makes a fresh, empty storage per test; see {@link StorageFactory}.
 * @param options What the storage declares beyond its capabilities; see {@link StorageConformanceOptions}.
 */
export function describeStorageConformance(
  name: string,
  make: StorageFactory,
  options: StorageConformanceOptions = {},
): void {
  describe(`storage conformance: ${name}`, async () => {
    const { capabilities, automation } = await probeCapabilities(make);
    let made: Unpacked;

    beforeEach(async () => {
      made = unpack(await make());
      await made.storage.open();
      if (made.peer !== made.storage) await made.peer.open();
    });

    afterEach(async () => {
      await made.storage.close();
      if (made.peer !== made.storage) await made.peer.close();
      await made.cleanup?.();
    });

    const use = () => made.storage;
    describeChannels(use);
    describeOwners(use);
    describeCopies(use);
    describeCommitWrites(use);
    describeCommitAtomicity(use);
    describeLanesConformance(use);
    describeRecordDeletion(use);
    describeDeletionConformance(use);
    describeSearchConformance(use, capabilities.search);
    describeCapabilitiesConformance(use, capabilities);
    describeMediaConformance(use, capabilities.media);
    describeAdoptionConformance(use, capabilities.adoptOwner, capabilities.media);
    describeReadStateConformance(use, capabilities.readState, capabilities.adoptOwner);
    if (automation && capabilities.adoptOwner)
      describeAutomationAdoption(() => ({ storage: made.storage, stores: made.automation! }));
    describeDevices(use);
    describeConcurrencyConformance(use, () => made.peer, capabilities);
    describeFencingConformance(use, () => made.peer, capabilities);
    if (options.persists) describeDurabilityConformance(use, () => made.reopen?.(), capabilities);
  });
}

/** Channels round-trip and are replaced by chat_id. */
function describeChannels(use: () => Storage): void {
  describe("channels", () => {
    test("channels - stored, replaced by chat_id and listed with archived ones", async () => {
      await use().commit(A, {
        channels: [channel("c1"), channel("c2", { archived: true, favorite: true, color: "#112233" })],
      });
      await use().commit(A, { channels: [channel("c1", { name: "renamed", icon: null })] });
      expect(await use().getChannel(A, "c1")).toEqual(channel("c1", { name: "renamed", icon: null }));
      expect(await use().getChannel(A, "nope")).toBeUndefined();
      const list = await use().listChannels(A);
      expect(list.map((c) => c.chat_id).sort()).toEqual(["c1", "c2"]);
      expect(list.find((c) => c.chat_id === "c2")).toEqual(
        channel("c2", { archived: true, favorite: true, color: "#112233" }),
      );
    });

    test("channels - every optional field round-trips", async () => {
      const full = channel("c9", {
        kind: "default",
        is_default: true,
        auto: true,
        favorite: false,
        icon: "iVBORw0KGgo=",
        color: "#abcdef",
        automation: false,
        created_ts: 1_700_000_000_123,
      });
      await use().commit(A, { channels: [full, thread("t9", "c9")] });
      expect(await use().getChannel(A, "c9")).toEqual(full);
      expect(await use().getChannel(A, "t9")).toEqual(thread("t9", "c9"));
    });
  });
}

/** Owners never see each other's records. */
function describeOwners(use: () => Storage): void {
  describe("owners", () => {
    test("owners - colliding ids never cross owners", async () => {
      await use().commit(A, {
        channels: [channel("c1", { name: "alice's" })],
        messages: [msg("m1", { text: "alpha secret", client_msg_id: "k1", role: "assistant", status: "streaming" })],
        outbox: [{ type: "message", payload: { who: "alice" } }],
      });
      await use().commit(B, {
        channels: [channel("c1", { name: "bob's" })],
        messages: [msg("m1", { text: "bravo", client_msg_id: "k1" })],
        outbox: [
          { type: "message", payload: { who: "bob" } },
          { type: "message", payload: { who: "bob" } },
        ],
      });
      await use().putDevice(A, device("d1", { device_name: "alice phone" }));
      await use().putDevice(B, device("d1", { device_name: "bob phone" }));

      expect((await use().getChannel(A, "c1"))?.name).toBe("alice's");
      expect((await use().getChannel(B, "c1"))?.name).toBe("bob's");
      expect((await use().getMessage(B, "m1"))?.text).toBe("bravo");
      expect((await use().findByClientMsgId(A, "c1", "k1"))?.text).toBe("alpha secret");
      expect((await use().getDevice(B, "d1"))?.device_name).toBe("bob phone");
      expect(await use().listDevices(B)).toHaveLength(1);
      expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 1 });
      expect(await use().outboxBounds(B)).toEqual({ first: 1, last: 2 });
      expect((await use().readOutbox(A, 0, 10)).map((e) => e.payload)).toEqual([{ who: "alice" }]);
      expect(await use().search(B, { query: "secret", scope: "all", limit: 10 })).toEqual([]);
      expect(ids((await use().history(B, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages)).toEqual(["m1"]);
      expect((await use().history(B, { chat_id: "c1", thread_id: null, limit: 10 }))!.messages[0].text).toBe("bravo");

      await use().commit(A, { deleteChannels: ["c1"] });
      expect(await use().getChannel(B, "c1")).toBeDefined();
      expect(await use().getMessage(B, "m1")).toBeDefined();
      expect(await use().getMessage(A, "m1")).toBeUndefined();
    });

    test("owners - an unknown owner reads as empty", async () => {
      expect(await use().listChannels("nobody")).toEqual([]);
      expect(await use().listDevices("nobody")).toEqual([]);
      expect(await use().outboxBounds("nobody")).toEqual({ first: 1, last: 0 });
      expect(await use().readOutbox("nobody", 0, 10)).toEqual([]);
      expect(await use().history("nobody", { chat_id: "c1", thread_id: null, limit: 10 })).toEqual({
        messages: [],
        has_more: false,
      });
      expect(await use().search("nobody", { query: "text", scope: "all", limit: 10 })).toEqual([]);
    });
  });
}

/** What is passed in or returned is a copy of stored state. */
function describeCopies(use: () => Storage): void {
  describe("copies", () => {
    test("copies - mutating what was passed in or returned leaves stored state alone", async () => {
      const input = msg("m1", { media: [mediaRef("x1")], runtime: { model: "demo" } });
      const frame = { type: "message", payload: { nested: { n: 1 } } };
      const ch = channel("c1");
      await use().commit(A, { channels: [ch], messages: [input], outbox: [frame] });
      input.text = "changed";
      input.media[0].filename = "changed";
      frame.payload.nested.n = 2;
      ch.name = "changed";

      const got = (await use().getMessage(A, "m1"))!;
      expect(got.text).toBe("text of m1");
      expect(got.media[0].filename).toBe("x1.png");
      got.runtime!.model = "mutated";
      expect((await use().getMessage(A, "m1"))!.runtime).toEqual({ model: "demo" });
      const entries = await use().readOutbox(A, 0, 10);
      expect(entries[0].payload).toEqual({ nested: { n: 1 } });
      (entries[0].payload.nested as { n: number }).n = 3;
      expect((await use().readOutbox(A, 0, 10))[0].payload).toEqual({ nested: { n: 1 } });
      const list = await use().listChannels(A);
      list[0].name = "mutated";
      expect((await use().getChannel(A, "c1"))!.name).toBe("name c1");
      const d = device("d1");
      await use().putDevice(A, d);
      d.caps.media = false;
      expect((await use().getDevice(A, "d1"))!.caps.media).toBe(true);
    });
  });
}

interface Unpacked {
  storage: Storage;
  /** The storage as made, when it is also a hook store and a schedule store (the built-in ones are). */
  automation: AutomationStorage | undefined;
  peer: Storage;
  cleanup: (() => Promise<void>) | undefined;
  reopen: (() => Storage) | undefined;
}

function unpack(made: Storage | StorageImplementation | StorageUnderTest): Unpacked {
  if (typeof (made as StorageImplementation).commit === "function") {
    const storage = defineStorage(made as StorageImplementation);
    const automation = isAutomationStorage(made) ? made : undefined;
    return { storage, automation, peer: storage, cleanup: undefined, reopen: undefined };
  }
  const { storage, peer, cleanup, reopen } = made as StorageUnderTest;
  const defined = defineStorage(storage);
  return {
    storage: defined,
    automation: isAutomationStorage(storage) ? storage : undefined,
    peer: peer ? defineStorage(peer) : defined,
    cleanup,
    reopen: reopen && (() => defineStorage(reopen())),
  };
}

/**
 * The storage's capabilities, and whether it is also the hook and schedule store, read from one
 * more storage that is made, never opened, and cleaned up.
 */
async function probeCapabilities(
  make: StorageFactory,
): Promise<{ capabilities: StorageCapabilities; automation: boolean }> {
  const { storage, automation, cleanup } = unpack(await make());
  // Best effort: the probe opened nothing, so a clean-up that finds nothing to clean may fail.
  await cleanup?.().catch(() => undefined);
  return { capabilities: storage.capabilities, automation: automation !== undefined };
}
