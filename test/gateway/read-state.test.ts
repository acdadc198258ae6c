// Read state (docs/PROTOCOL.md §15) through a real gateway on a real ws, on each storage with the
// readState capability (memory, sql.js, PostgreSQL): the `read` frame, one watermark per lane that
// never moves back, the stored `read` broadcast, `unread` on channel.list.
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type StoredMessage } from "chat-gateway";
import { everyStorage } from "../fixtures/storages.js";
import { Client, startGateway, type Harness } from "./harness.js";

const { storages, cleanup } = await everyStorage("read state");

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});
afterAll(cleanup);

describe.each(storages)("%s", (_name, make) => {
  it("read - moves the lane's watermark, is stored and sent to every device with device_id; an older read moves nothing", async () => {
    h = await startGateway({ storage: await make() });
    const phone = await Client.connect(h.url, { device_id: "phone" });
    const tablet = await Client.connect(h.url, { device_id: "tablet" });
    const first = (await phone.say({ chat_id: "default", text: "one" })).final;
    const second = (await phone.say({ chat_id: "default", text: "two" })).final;

    phone.send("read", { chat_id: "default", message_id: second.payload.message_id });
    const seen = await tablet.waitFor((f) => f.type === "read");
    expect(seen.payload).toEqual({
      chat_id: "default",
      thread_id: null,
      message_id: second.payload.message_id,
      device_id: "phone",
      ts: expect.any(Number),
    });
    expect(seen.seq).toEqual(expect.any(Number));
    await phone.waitFor((f) => f.type === "read");

    // Older than the watermark: nothing stored, nothing sent (the ping answers after it ran).
    tablet.send("read", { chat_id: "default", message_id: first.payload.message_id });
    await tablet.request("ping", {});
    await phone.request("ping", {});
    expect(tablet.of("read")).toHaveLength(1);
    expect(phone.of("read")).toHaveLength(1);

    // A device that was away learns the watermark on sync.
    const laptop = await Client.connect(h.url, { device_id: "laptop" });
    await laptop.request("sync", { cursor: 0 });
    expect(laptop.of("read").map((f) => f.payload.message_id)).toEqual([second.payload.message_id]);
    const list = await laptop.request("channel.list", {});
    expect(list.payload.channels.find((c: { chat_id: string }) => c.chat_id === "default").unread).toBe(0);
  });

  it("read - a message of another lane or an unknown one is not_found, stores nothing and leaves other devices untouched", async () => {
    const storage = await make();
    h = await startGateway({ storage });
    const phone = await Client.connect(h.url, { device_id: "phone" });
    const tablet = await Client.connect(h.url, { device_id: "tablet" });
    const side = await phone.request("channel.create", { name: "Side", kind: "thread", parent_chat_id: "default" });
    const created = await phone.request("channel.create", { name: "Work", kind: "channel" });
    const answer = (await phone.say({ chat_id: "default", text: "hi" })).final;

    const otherLane = await phone.request("read", {
      chat_id: created.payload.chat_id,
      message_id: answer.payload.message_id,
    });
    expect(otherLane.type).toBe("error");
    expect(otherLane.payload.code).toBe("not_found");
    const unknown = await phone.request("read", { chat_id: "default", message_id: "m-nope" });
    expect(unknown.payload.code).toBe("not_found");
    const noChannel = await phone.request("read", { chat_id: "c-nope", message_id: answer.payload.message_id });
    expect(noChannel.payload.code).toBe("not_found");
    // A thread is a lane of its own: the channel's answer is not in it, nor a thread's in the channel.
    const inThread = await phone.request("read", {
      chat_id: "default",
      thread_id: side.payload.chat_id,
      message_id: answer.payload.message_id,
    });
    expect(inThread.payload.code).toBe("not_found");
    expect(await storage.readMarks(ANONYMOUS_OWNER)).toEqual([]);

    await tablet.request("ping", {});
    expect(tablet.of("read")).toHaveLength(0);
    expect(tablet.of("error")).toHaveLength(0);
    const list = await tablet.request("channel.list", {});
    expect(list.payload.channels.find((c: { chat_id: string }) => c.chat_id === "default").unread).toBe(1);
    const fresh = await Client.connect(h.url, { device_id: "laptop" });
    await fresh.request("sync", { cursor: 0 });
    expect(fresh.of("read")).toHaveLength(0);
  });

  it("channel.list - unread counts assistant messages newer than each lane's watermark, threads add to their channel, at most 999", async () => {
    const storage = await make();
    h = await startGateway({ storage });
    const phone = await Client.connect(h.url, { device_id: "phone" });
    const thread = await phone.request("channel.create", { name: "Side", kind: "thread", parent_chat_id: "default" });
    const work = await phone.request("channel.create", { name: "Busy", kind: "channel" });
    const message = (id: string, chat: string, threadId: string | null, ts: number): StoredMessage =>
      ({
        message_id: id,
        chat_id: chat,
        thread_id: threadId,
        role: "assistant",
        text: id,
        reasoning: "",
        ts,
        media: [],
        status: "complete",
      }) as StoredMessage;
    const busy = Array.from({ length: 1005 }, (_, i) =>
      message(`b${String(i).padStart(4, "0")}`, work.payload.chat_id, null, 1_000 + i),
    );
    await storage.commit(ANONYMOUS_OWNER, {
      messages: [
        message("f1", "default", null, 10),
        message("f2", "default", null, 20),
        message("t1", "default", thread.payload.chat_id, 30),
        ...busy,
      ],
    });

    const unread = async () => {
      const list = await phone.request("channel.list", {});
      return Object.fromEntries(
        list.payload.channels.map((c: { chat_id: string; unread: number }) => [c.chat_id, c.unread]),
      );
    };
    expect(await unread()).toEqual({ default: 3, [thread.payload.chat_id]: 1, [work.payload.chat_id]: 999 });
    phone.send("read", { chat_id: "default", message_id: "f1" });
    await phone.waitFor((f) => f.type === "read");
    expect(await unread()).toMatchObject({ default: 2, [thread.payload.chat_id]: 1 });
    phone.send("read", { chat_id: work.payload.chat_id, message_id: "b0010" });
    await phone.waitFor((f) => f.type === "read" && f.payload.message_id === "b0010");
    expect((await unread())[work.payload.chat_id]).toBe(994);
  });
});
