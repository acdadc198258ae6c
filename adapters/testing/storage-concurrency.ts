/**
 * Conformance under concurrency: many calls at once on one owner for each invariant the gateway
 * keeps through the storage (see `StorageImplementation` in chat-gateway, "Concurrency"). The calls
 * alternate between the storage and its peer (a second instance on the same data, when the factory
 * gives one), as two gateway processes would make them.
 * @module
 */
import { describe, expect, test } from "vitest";
import type { Channel } from "chat-gateway";
import type { Change, ChannelExpectation, CommitResult, Storage, StorageCapabilities } from "chat-gateway/storage";
import { A, B, capabilityLabel, channel, device, msg, thread } from "./storage-records.js";
import { answer, markOf, readChange } from "./storage-read-state.js";

/** How many calls each test makes at once. */
const AT_ONCE = 20;

/** The owner's default channel as the gateway makes it on first use. */
function general(extra: Partial<Channel> = {}): Channel {
  return channel("default", {
    name: "General",
    kind: "default",
    is_default: true,
    created_ts: 1_700_000_000_000,
    ...extra,
  });
}

const asRead = (channels: Channel[]): ChannelExpectation[] => channels.map((c) => ({ chat_id: c.chat_id, channel: c }));

/** Reads, decides and commits until the commit is not skipped, as the gateway does. */
async function untilApplied(
  decide: () => Promise<Change>,
  commit: (change: Change) => Promise<CommitResult>,
): Promise<number> {
  for (let attempt = 1; attempt <= 10 * AT_ONCE; attempt++) {
    if (!(await commit(await decide())).skipped) return attempt;
  }
  throw new Error(
    "a change expecting the channels as just read was skipped every time: does the storage return channels exactly as stored?",
  );
}

/** The channels a device holds after replaying the owner's outbox from the start. */
async function replayed(storage: Storage, owner: string): Promise<Map<string, Channel>> {
  const held = new Map<string, Channel>();
  for (const entry of await storage.readOutbox(owner, 0, 100_000)) {
    if (entry.type === "channel.renamed" || entry.type === "channel.created")
      held.set(entry.payload.chat_id as string, entry.payload as unknown as Channel);
  }
  return held;
}

/** The gateway's `channel.set_default`: demote the defaults read, promote the target, expecting both as read. */
function setDefault(storage: Storage, owner: string, chatId: string): Promise<number> {
  return untilApplied(
    async () => {
      const target = (await storage.getChannel(owner, chatId))!;
      const previous = (await storage.listChannels(owner)).filter((c) => c.is_default && c.chat_id !== chatId);
      const changed = [...previous.map((c) => ({ ...c, is_default: false })), { ...target, is_default: true }];
      return {
        channels: changed,
        expectChannels: asRead([target, ...previous]),
        outbox: changed.map((c) => ({ type: "channel.renamed", payload: { ...c } })),
      };
    },
    (change) => storage.commit(owner, change),
  );
}

/**
 * Declares the concurrency tests. `use` is the storage of the running test, `peer` a second
 * instance on the same data (or the same storage again).
 */
export function describeConcurrencyConformance(
  use: () => Storage,
  peer: () => Storage,
  capabilities: StorageCapabilities,
): void {
  const via = (i: number) => (i % 2 === 0 ? use() : peer());
  describe("concurrency", () => {
    describeChannelExpectations(use);
    describeDefaultChannelRaces(use, peer, via);
    describeChannelUpdateRaces(use, peer, via);
    describeDeleteRaces(use, peer, via);
    describeDeviceRaces(use, peer, via);
    describeOneWinnerRaces(use, via, capabilities);
    if (capabilities.readState) describeReadRaces(use, via);
  });
}

/** What `expectChannels` compares: a channel as read by either call matches; one changed, gone or of another owner does not. */
function describeChannelExpectations(use: () => Storage): void {
  test("concurrency - a channel expected as read by getChannel and listChannels is found as expected; one changed or gone is not", async () => {
    const full = channel("c1", {
      favorite: true,
      icon: null,
      color: "#123456",
      automation: true,
      model: "m",
      created_ts: 5,
    });
    await use().commit(A, { channels: [full, thread("t1", "c1")] });
    const got = (await use().getChannel(A, "c1"))!;
    const listed = (await use().listChannels(A)).find((c) => c.chat_id === "c1")!;
    expect(
      (
        await use().commit(A, {
          channels: [{ ...got, name: "one" }],
          expectChannels: asRead([got]),
          outbox: [{ type: "x", payload: {} }],
        })
      ).skipped,
    ).toBeFalsy();
    expect(
      await use().commit(A, {
        channels: [{ ...listed, name: "two" }],
        expectChannels: asRead([listed]),
        outbox: [{ type: "x", payload: {} }],
      }),
    ).toEqual({ seqs: [], orphanedMedia: [], skipped: true });
    expect(
      await use().commit(A, { channels: [channel("c9")], expectChannels: [{ chat_id: "t1", channel: null }] }),
    ).toMatchObject({ skipped: true });
    expect(
      await use().commit(A, { channels: [channel("c9")], expectChannels: [{ chat_id: "c1", channel: got }] }),
    ).toMatchObject({ skipped: true });
    expect(await use().getChannel(A, "c9")).toBeUndefined();
    expect((await use().getChannel(A, "c1"))!.name).toBe("one");
    expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 1 });
    // Another owner's channel of the same id is not this owner's.
    expect(
      (await use().commit(B, { channels: [channel("c1")], expectChannels: [{ chat_id: "c1", channel: null }] }))
        .skipped,
    ).toBeFalsy();
  });
}

/** One default channel: made once on first use, and one left after `set_default`s racing each other. */
function describeDefaultChannelRaces(use: () => Storage, peer: () => Storage, via: (i: number) => Storage): void {
  test(`concurrency - ${AT_ONCE} first uses of an owner at once make exactly one default channel, default, with one frame`, async () => {
    const results = await Promise.all(
      Array.from({ length: AT_ONCE }, (_, i) =>
        via(i).commit(A, {
          channels: [general({ name: `General ${i}` })],
          expectChannels: [{ chat_id: "default", channel: null }],
          outbox: [{ type: "channel.created", payload: { chat_id: "default", i } }],
        }),
      ),
    );
    const applied = results.flatMap((r, i) => (r.skipped ? [] : [i]));
    expect(applied).toHaveLength(1);
    expect(await use().listChannels(A)).toEqual([general({ name: `General ${applied[0]}` })]);
    expect((await use().readOutbox(A, 0, 100)).map((e) => [e.seq, e.payload.i])).toEqual([[1, applied[0]]]);
  });

  test(`concurrency - ${AT_ONCE} set_default at once, each to its own channel: one default at the end, and the frames replay to it`, async () => {
    const targets = Array.from({ length: AT_ONCE }, (_, i) => channel(`c${i}`));
    await use().commit(A, { channels: [general(), ...targets] });
    await Promise.all(targets.map((t, i) => setDefault(via(i), A, t.chat_id)));
    const defaults = (await peer().listChannels(A)).filter((c) => c.is_default).map((c) => c.chat_id);
    expect(defaults).toHaveLength(1);
    expect([...(await replayed(use(), A)).values()].filter((c) => c.is_default).map((c) => c.chat_id)).toEqual(
      defaults,
    );
  });
}

/** Updates of one channel racing each other, and an update racing the channel's delete. */
function describeChannelUpdateRaces(use: () => Storage, peer: () => Storage, via: (i: number) => Storage): void {
  test("concurrency - updates of different fields of one channel at once all land, and an update racing a delete never brings the channel back", async () => {
    await use().commit(A, { channels: [channel("c1"), channel("c2")] });
    const fields: Array<Partial<Channel>> = [
      { name: "renamed" },
      { archived: true },
      { favorite: true },
      { color: "#abcdef" },
      { icon: null },
      { model: "m" },
    ];
    await Promise.all(
      fields.map((patch, i) =>
        untilApplied(
          async () => {
            const current = (await via(i).getChannel(A, "c1"))!;
            return { channels: [{ ...current, ...patch }], expectChannels: asRead([current]) };
          },
          (change) => via(i).commit(A, change),
        ),
      ),
    );
    expect(await peer().getChannel(A, "c1")).toEqual(channel("c1", Object.assign({}, ...fields)));
    const read = (await use().getChannel(A, "c2"))!;
    const [update, remove] = await Promise.all([
      use().commit(A, {
        channels: [{ ...read, name: "late" }],
        expectChannels: asRead([read]),
        outbox: [{ type: "channel.renamed", payload: { chat_id: "c2" } }],
      }),
      peer().commit(A, {
        deleteChannels: ["c2"],
        expectChannels: asRead([read]),
        outbox: [{ type: "channel.deleted", payload: { chat_id: "c2" } }],
      }),
    ]);
    expect([update.skipped ?? false, remove.skipped ?? false].sort()).toEqual([false, true]);
    expect((await use().getChannel(A, "c2"))?.name).toBe(remove.skipped ? "late" : undefined);
  });
}

/** Writes that require a message or channel, racing its delete: none brings it back. */
function describeDeleteRaces(use: () => Storage, peer: () => Storage, via: (i: number) => Storage): void {
  test(`concurrency - ${AT_ONCE} saves requiring a message, racing its delete, never bring it back`, async () => {
    await use().commit(A, {
      channels: [channel("c1")],
      messages: Array.from({ length: AT_ONCE }, (_, i) =>
        msg(`m${i}`, { role: "assistant", status: "streaming", text: "" }),
      ),
    });
    await Promise.all(
      Array.from({ length: AT_ONCE }, (_, i) => [
        via(i).commit(A, { deleteMessages: [`m${i}`] }),
        via(i + 1).commit(A, {
          messages: [msg(`m${i}`, { role: "assistant", text: `secret ${i}` })],
          outbox: [{ type: "message.stop", payload: { message_id: `m${i}`, text: `secret ${i}` } }],
          requireMessages: [`m${i}`],
        }),
      ]).flat(),
    );
    for (let i = 0; i < AT_ONCE; i++) expect(await use().getMessage(A, `m${i}`)).toBeUndefined();
    expect(JSON.stringify(await use().readOutbox(A, 0, 1000))).not.toContain("secret");
  });

  test(`concurrency - ${AT_ONCE} messages requiring their channel, racing its delete, are never stored in it`, async () => {
    await use().commit(A, { channels: [channel("c1")] });
    const [, ...sends] = await Promise.all([
      peer().commit(A, { deleteChannels: ["c1"] }),
      ...Array.from({ length: AT_ONCE }, (_, i) =>
        via(i).commit(A, {
          messages: [msg(`s${i}`, { text: `sent ${i}` })],
          requireChannels: ["c1"],
          outbox: [{ type: "message", payload: { message_id: `s${i}` } }],
        }),
      ),
    ]);
    for (let i = 0; i < AT_ONCE; i++) expect(await use().getMessage(A, `s${i}`)).toBeUndefined();
    // A send stored before the deletion went with it (its frame redacted); a skipped one gave out no seq.
    expect((await use().outboxBounds(A)).last).toBe(sends.filter((r) => !r.skipped).length);
    expect(await use().commit(A, { messages: [msg("late")], requireChannels: ["c1"] })).toEqual({
      seqs: [],
      orphanedMedia: [],
      skipped: true,
    });
  });
}

/** Devices stored at once: different ones all kept, one written many times holds one whole write. */
function describeDeviceRaces(use: () => Storage, peer: () => Storage, via: (i: number) => Storage): void {
  test(`concurrency - ${AT_ONCE} devices stored at once are all kept, and one device written at once holds one of the writes`, async () => {
    await Promise.all(Array.from({ length: AT_ONCE }, (_, i) => via(i).putDevice(A, device(`d${i}`))));
    expect((await use().listDevices(A)).map((d) => d.device_id).sort()).toEqual(
      Array.from({ length: AT_ONCE }, (_, i) => `d${i}`).sort(),
    );
    const writes = Array.from({ length: AT_ONCE }, (_, i) =>
      device("same", { device_name: `name ${i}`, last_seen: i }),
    );
    await Promise.all(writes.map((d, i) => via(i).putDevice(A, d)));
    expect(writes).toContainEqual(await peer().getDevice(A, "same"));
  });
}

/** Races only one side may win: sends of one `client_msg_id`, and adoption against its target's first write. */
function describeOneWinnerRaces(
  use: () => Storage,
  via: (i: number) => Storage,
  capabilities: StorageCapabilities,
): void {
  if (capabilities.uniqueClientMsgId) {
    test(`concurrency - ${AT_ONCE} sends of one client_msg_id at once, through both instances: exactly one is stored`, async () => {
      await use().commit(A, { channels: [channel("c1")] });
      const settled = await Promise.allSettled(
        Array.from({ length: AT_ONCE }, (_, i) =>
          via(i).commit(A, {
            messages: [msg(`k${i}`, { client_msg_id: "same" })],
            outbox: [{ type: "message", payload: {} }],
          }),
        ),
      );
      expect(settled.filter((s) => s.status === "fulfilled")).toHaveLength(1);
      expect(await use().outboxBounds(A)).toEqual({ first: 1, last: 1 });
    });
  }

  if (capabilities.adoptOwner) {
    test(`${capabilityLabel("adoptOwner", true)}: racing the first write of the owner it adopts into, exactly one of them applies`, async () => {
      for (let round = 0; round < 10; round++) {
        const [from, to] = [`from-${round}`, `to-${round}`];
        await use().commit(from, {
          channels: [general()],
          outbox: [
            { type: "channel.created", payload: { chat_id: "default" } },
            { type: "x", payload: {} },
          ],
        });
        const [adopted, first] = await Promise.allSettled([
          via(round).adoptOwner(from, to),
          via(round + 1).commit(to, {
            channels: [general({ name: "fresh" })],
            expectChannels: [{ chat_id: "default", channel: null }],
            outbox: [{ type: "channel.created", payload: { chat_id: "default" } }],
          }),
        ]);
        if (first.status === "rejected") throw first.reason;
        const firstApplied = !first.value.skipped;
        expect({ round, adopted: adopted.status === "fulfilled", firstApplied }).toEqual({
          round,
          adopted: !firstApplied,
          firstApplied,
        });
        expect(await use().listChannels(to)).toEqual([general(firstApplied ? { name: "fresh" } : {})]);
        expect(await use().outboxBounds(to)).toEqual(firstApplied ? { first: 1, last: 1 } : { first: 1, last: 2 });
      }
    });
  }
}

/**
 * Reads of one lane from several devices at once, through both instances, in no particular order:
 * the watermark ends at the newest, and the stored `read` frames, in seq order, only ever move
 * forward (what a device replaying them sees).
 */
function describeReadRaces(use: () => Storage, via: (i: number) => Storage): void {
  test(`${capabilityLabel("readState", true)}: ${2 * AT_ONCE} reads of two lanes at once never move a watermark back`, async () => {
    const flat = Array.from({ length: AT_ONCE }, (_, i) => answer(`f${i}`));
    const side = Array.from({ length: AT_ONCE }, (_, i) => answer(`s${i}`, { thread_id: "t1" }));
    await use().commit(A, { channels: [channel("c1"), thread("t1", "c1")], messages: [...flat, ...side] });
    // A fixed shuffle (7 is prime to 20): old and new reads interleave.
    const order = Array.from({ length: AT_ONCE }, (_, i) => (i * 7) % AT_ONCE);
    const results = await Promise.all(
      order.flatMap((n, i) => [via(i).commit(A, readChange(flat[n])), via(i + 1).commit(A, readChange(side[n]))]),
    );
    const applied = results.filter((r) => !r.skipped).length;
    const frames = await use().readOutbox(A, 0, 1000);
    expect(frames).toHaveLength(applied);
    expect((await use().outboxBounds(A)).last).toBe(applied);
    for (const lane of [null, "t1"]) {
      const ts = frames.filter((f) => f.payload.thread_id === lane).map((f) => f.payload.ts as number);
      expect(ts).toEqual([...ts].sort((x, y) => x - y));
      expect(new Set(ts).size).toBe(ts.length);
    }
    const marks = (await use().readMarks(A)).sort((x, y) => x.message_id.localeCompare(y.message_id));
    expect(marks).toEqual(
      [markOf(flat[AT_ONCE - 1]), markOf(side[AT_ONCE - 1])].sort((x, y) => x.message_id.localeCompare(y.message_id)),
    );
  });
}
