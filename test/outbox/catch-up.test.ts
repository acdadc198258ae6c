// The outbox catch-up is what any bus linking processes uses after an outage: the stored frames
// it missed are read back from the outbox once, and none it delivered live meanwhile is repeated.
// Real memory storage; the "bus" is the two subscribers' delivery lists.
import { describe, expect, it } from "vitest";
import { outboxCatchUp, type BusMessage, type OutboxCatchUpHooks } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";

function setup(subscribed: string[]) {
  const storage = memoryStorage();
  const delivered: BusMessage[] = [];
  const warnings: string[] = [];
  let recovered = 0;
  const hooks: OutboxCatchUpHooks = {
    storage,
    owners: () => subscribed,
    hasSubscriber: (owner) => subscribed.includes(owner),
    deliver: (message) => delivered.push(message),
    recovered: () => recovered++,
    closed: () => false,
    warn: (message) => warnings.push(message),
  };
  const catchUp = outboxCatchUp(hooks);
  const commit = async (owner: string, i: number) =>
    (await storage.commit(owner, { outbox: [{ type: "message", payload: { i } }] })).seqs[0];
  return { storage, delivered, warnings, catchUp, commit, recovered: () => recovered };
}

const seqsOf = (messages: BusMessage[], owner: string) =>
  messages.filter((m) => m.owner === owner).map((m) => m.frame.seq);

describe("outbox catch-up", () => {
  it("reads back what was missed while the link was down, once, skipping what arrived live", async () => {
    const { delivered, catchUp, commit, recovered } = setup(["alice"]);
    catchUp.delivered("alice", await commit("alice", 1));
    catchUp.linkDown();
    expect(catchUp.down()).toBe(true);
    await commit("alice", 2);
    const live = await commit("alice", 3);
    // One frame still reaches this process during the outage (its own publish): not read back again.
    catchUp.delivered("alice", live);
    await commit("alice", 4);
    const readBack = catchUp.linkUp();
    expect(catchUp.down()).toBe(false);
    await readBack!();
    expect(seqsOf(delivered, "alice")).toEqual([2, 4]);
    expect(recovered()).toBe(2);
  });

  it("an owner whose first device arrives during the outage catches up from the outbox's end at that moment", async () => {
    const { delivered, catchUp, commit } = setup(["bob"]);
    await commit("bob", 1);
    catchUp.linkDown();
    await catchUp.noteGap("bob");
    await commit("bob", 2);
    await catchUp.linkUp()!();
    expect(seqsOf(delivered, "bob")).toEqual([2]);
  });

  it("no outage, nothing to read back; an owner with no subscriber here gets nothing", async () => {
    const { delivered, catchUp, commit } = setup([]);
    expect(catchUp.linkUp()).toBeUndefined();
    catchUp.delivered("carol", await commit("carol", 1));
    catchUp.linkDown();
    await commit("carol", 2);
    await catchUp.linkUp()!();
    expect(delivered).toEqual([]);
  });
});
