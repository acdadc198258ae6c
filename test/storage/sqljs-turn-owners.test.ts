// The sql.js storage answers `waitingTurns` and `unfinishedMessages` for an owner that has no
// waiting or streaming message without asking its database process (a joining device asks both,
// docs/PROTOCOL.md §14.3). What it answers must stay what the database holds: a message that waits
// or streams is found from the write that stored it on, after a restart, and after an adoption.
import { afterEach, describe, expect, test } from "vitest";
import { message, openStorage, removeTempDirs, tempDir } from "./sqljs-helpers.js";

afterEach(removeTempDirs);

const ids = (rows: Array<{ owner: string; message: { message_id: string } }>) =>
  rows.map((r) => `${r.owner}/${r.message.message_id}`);
const lane = (owner: string) => ({ owner, chat_id: "c1", thread_id: null });

describe("sql.js: owners with waiting or streaming messages", () => {
  test("reads for owners without such messages find none; each stored one is found at once, after a restart and after an adoption", async () => {
    const dir = await tempDir();
    let { storage } = await openStorage(dir);
    expect(await storage.waitingTurns(lane("ann"))).toEqual([]);
    expect(await storage.unfinishedMessages({ owner: "bob" })).toEqual([]);

    // A message stored without a mark does not count; one that waits counts from its own commit on.
    await storage.commit("ann", { messages: [message("plain")] });
    expect(await storage.waitingTurns({ owner: "ann" })).toEqual([]);
    const waiting = storage.commit("ann", { messages: [message("w1", { waiting: true })] });
    const read = storage.waitingTurns({ owner: "ann" });
    await waiting;
    expect(ids(await read)).toEqual(["ann/w1"]);
    await storage.commit("bob", { messages: [message("s1", { role: "assistant", status: "streaming" })] });
    expect(ids(await storage.unfinishedMessages({ owner: "bob" }))).toEqual(["bob/s1"]);
    expect(await storage.unfinishedMessages({ owner: "ann" })).toEqual([]);
    await storage.close();

    ({ storage } = await openStorage(dir));
    expect(ids(await storage.waitingTurns(lane("ann")))).toEqual(["ann/w1"]);
    expect(ids(await storage.unfinishedMessages({ owner: "bob" }))).toEqual(["bob/s1"]);
    expect(await storage.waitingTurns({ owner: "carl" })).toEqual([]);
    expect(await storage.adoptOwner("ann", "carl")).toMatchObject({ messages: 2 });
    expect(ids(await storage.waitingTurns({ owner: "carl" }))).toEqual(["carl/w1"]);
    expect(ids(await storage.waitingTurns())).toEqual(["carl/w1"]);
    await storage.close();

    // A closed storage still refuses the reads it would have skipped.
    await expect(storage.waitingTurns({ owner: "dora" })).rejects.toThrow(/closed/);
  });
});
