import { afterEach, describe, expect, it } from "vitest";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness;
afterEach(async () => h?.close());

const PNG_1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

describe("channels", () => {
  it("channels - list sorts favorites first, then name ignoring case, then chat_id", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    for (const name of ["beta", "Alpha", "gamma"]) await c.request("channel.create", { name, kind: "channel" });
    await c.request("channel.create", { name: "zulu", kind: "channel", favorite: true });
    const names = (await c.request("channel.list", {})).payload.channels.map((x: any) => x.name);
    expect(names).toEqual(["zulu", "Alpha", "beta", "gamma", "General"]);
  });

  it("channels - create answers channel.created with the id, broadcasts it without, and stores it", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const created = await a.request("channel.create", {
      name: "  Work  ",
      kind: "channel",
      color: "#aa00FF",
      icon: PNG_1x1,
    });
    expect(created).toMatchObject({
      type: "channel.created",
      seq: 1,
      payload: {
        name: "Work",
        kind: "channel",
        parent_chat_id: null,
        is_default: false,
        archived: false,
        color: "#aa00FF",
        icon: PNG_1x1,
      },
    });
    const seen = await b.waitFor((f) => f.type === "channel.created");
    expect(seen.id).toBeUndefined();
    expect(seen.seq).toBe(1);
    expect(a.of("channel.created")).toHaveLength(1);
    const thread = await a.request("channel.create", {
      name: "T",
      kind: "thread",
      parent_chat_id: created.payload.chat_id,
    });
    expect(thread.payload).toMatchObject({ kind: "thread", parent_chat_id: created.payload.chat_id });
  });

  it.each([
    ["an empty name", { name: "", kind: "channel" }, "unsupported"],
    ["a blank name", { name: "   ", kind: "channel" }, "unsupported"],
    ["a 101-character name", { name: "x".repeat(101), kind: "channel" }, "unsupported"],
    ["a colour that is not #RRGGBB", { name: "ok", kind: "channel", color: "red" }, "unsupported"],
    ["an icon that is not PNG or JPEG", { name: "ok", kind: "channel", icon: "aGVsbG8=" }, "unsupported"],
    ["an icon over 256 KiB", { name: "ok", kind: "channel", icon: "A".repeat(400_000) }, "unsupported"],
    ["a thread without parent", { name: "ok", kind: "thread" }, "unsupported"],
    ["a thread with an unknown parent", { name: "ok", kind: "thread", parent_chat_id: "nope" }, "not_found"],
    ["a channel with a parent", { name: "ok", kind: "channel", parent_chat_id: "default" }, "unsupported"],
  ])("channels - create refuses %s", async (_what, payload, code) => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const answer = await c.request("channel.create", payload);
    expect(answer.type).toBe("error");
    expect(answer.payload.code).toBe(code);
    await c.close();
  });

  it("channels - 100 characters is the longest name", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    expect((await c.request("channel.create", { name: "é".repeat(100), kind: "channel" })).type).toBe(
      "channel.created",
    );
  });

  it("channels - update renames, archives, restyles and answers channel.renamed", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const { payload } = await c.request("channel.create", { name: "Old", kind: "channel" });
    const renamed = await c.request("channel.update", {
      chat_id: payload.chat_id,
      name: "New",
      archived: true,
      favorite: true,
      color: null,
    });
    expect(renamed).toMatchObject({
      type: "channel.renamed",
      payload: { chat_id: payload.chat_id, name: "New", archived: true, favorite: true, color: null },
    });
    expect((await c.request("channel.update", { chat_id: "missing", name: "x" })).payload.code).toBe("not_found");
    const listed = (await c.request("channel.list", {})).payload.channels.find(
      (x: any) => x.chat_id === payload.chat_id,
    );
    expect(listed).toMatchObject({ name: "New", archived: true });
  });

  it("channels - set_default answers with the new default and renames the old one, both stored and broadcast", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const { payload } = await a.request("channel.create", { name: "Work", kind: "channel" });
    const answer = await a.request("channel.set_default", { chat_id: payload.chat_id });
    expect(answer).toMatchObject({ type: "channel.renamed", payload: { chat_id: payload.chat_id, is_default: true } });
    const old = await a.waitFor((f) => f.type === "channel.renamed" && f.payload.chat_id === "default");
    expect(old.payload).toMatchObject({ kind: "default", is_default: false });
    await b.waitFor((f) => f.type === "channel.renamed" && f.payload.chat_id === "default");
    expect(b.of("channel.renamed").map((f) => [f.payload.chat_id, f.payload.is_default])).toEqual([
      [payload.chat_id, true],
      ["default", false],
    ]);
    const list = (await a.request("channel.list", {})).payload.channels;
    expect(list.filter((x: any) => x.is_default).map((x: any) => x.chat_id)).toEqual([payload.chat_id]);
    expect((await a.request("channel.set_default", { chat_id: "nope" })).payload.code).toBe("not_found");
  });

  it("channels - the default channel and the current default cannot be deleted", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    expect((await c.request("channel.delete", { chat_id: "default" })).payload.code).toBe("unsupported");
    const { payload } = await c.request("channel.create", { name: "Work", kind: "channel" });
    await c.request("channel.set_default", { chat_id: payload.chat_id });
    expect((await c.request("channel.delete", { chat_id: payload.chat_id })).payload.code).toBe("unsupported");
    // kind "default" stays for life, also when it is no longer the default
    expect((await c.request("channel.delete", { chat_id: "default" })).payload.code).toBe("unsupported");
    expect((await c.request("channel.delete", { chat_id: "missing" })).payload.code).toBe("not_found");
  });

  it("channels - delete takes its threads and their messages with it", async () => {
    h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const ch = (await a.request("channel.create", { name: "Work", kind: "channel" })).payload;
    const th = (await a.request("channel.create", { name: "T", kind: "thread", parent_chat_id: ch.chat_id })).payload;
    await a.say({ chat_id: ch.chat_id, text: "in channel" });
    await a.say({ chat_id: th.chat_id, text: "in thread" });
    const answer = await a.request("channel.delete", { chat_id: ch.chat_id });
    expect(answer).toMatchObject({ type: "channel.deleted", payload: { chat_id: ch.chat_id } });
    await b.waitFor((f) => f.type === "channel.deleted" && f.payload.chat_id === th.chat_id);
    expect((await a.request("history", { chat_id: ch.chat_id })).payload.code).toBe("not_found");
    expect((await a.request("search", { query: "thread", scope: "all" })).payload.hits).toEqual([]);
    const ids = (await a.request("channel.list", {})).payload.channels.map((x: any) => x.chat_id);
    expect(ids).toEqual(["default"]);
  });
});
