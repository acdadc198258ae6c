import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

let h: Harness | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const about = (id: string) => (f: Frame) => f.payload?.message_id === id;

describe("deleting a message while its answer streams", () => {
  it("delete - stops the turn; nothing about the message is sent or stored after message.deleted", async () => {
    const g = gate();
    let sawAbort = false;
    h = await startGateway({
      updateIntervalMs: 1,
      checkpointIntervalMs: 1,
      runtime: scriptedRuntime(async function* (input) {
        if (input.message.text !== "go") {
          yield { type: "text", delta: "fine" } as RuntimeEvent;
          return;
        }
        yield { type: "text", delta: "secret partial" } as RuntimeEvent;
        yield { type: "tool-start", id: "t1", name: "search", args: { q: "x" } } as RuntimeEvent;
        await Promise.race([g.wait, new Promise((resolve) => input.signal.addEventListener("abort", resolve))]);
        sawAbort = input.signal.aborted;
        yield { type: "text", delta: " and more" } as RuntimeEvent;
        yield { type: "tool-end", id: "t1", ok: true, output: "done" } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    const watcher = await Client.connect(h.url, { device_id: "watcher" });
    await a.request("message.send", { chat_id: "default", text: "go" });
    const id = (await a.waitFor((f) => f.type === "message.start")).payload.message_id as string;
    await a.waitFor((f) => f.type === "tool.start");
    await a.waitFor((f) => f.type === "message.update" && f.payload.text === "secret partial");

    const deleted = await a.request("message.delete", { chat_id: "default", message_ids: [id] });
    expect(deleted).toMatchObject({ type: "message.deleted", payload: { message_ids: [id] } });
    g.release();
    await a.waitFor((f) => f.type === "typing" && f.payload.on === false);
    await sleep(100);
    await a.request("ping", {});
    expect(sawAbort).toBe(true);
    for (const c of [a, watcher]) {
      const at = c.frames.findIndex((f) => f.type === "message.deleted");
      expect(at).toBeGreaterThan(-1);
      expect(c.frames.slice(at + 1).filter(about(id))).toEqual([]);
      expect(c.frames.filter((f) => f.type === "message.stop" || f.type === "tool.end")).toEqual([]);
    }
    const history = (await a.request("history", { chat_id: "default" })).payload.messages;
    expect(history.map((m: any) => m.text)).toEqual(["go"]);
    // The lane is free again, and a later answer is not the deleted one coming back.
    const { final } = await a.say({ chat_id: "default", text: "next" });
    expect(final.payload.message_id).not.toBe(id);
    const replay = await Client.connect(h.url, { device_id: "late" });
    await replay.request("sync", { cursor: 0 });
    expect(replay.frames.filter(about(id))).toEqual([]);
    expect(JSON.stringify(replay.frames)).not.toContain("secret partial");
    expect(
      (await a.request("history", { chat_id: "default" })).payload.messages.map((m: any) => m.message_id),
    ).not.toContain(id);
  });
});

const storages: Array<[string, () => Storage]> = [
  ["memory", () => memoryStorage()],
  [
    "sql.js",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "cg-delete-"));
      dirs.push(dir);
      return sqlJsStorage({ dir });
    },
  ],
];

describe.each(storages)("sync after a delete never replays deleted content (%s)", (_name, make) => {
  it("delete - a deleted message's frames replay as nothing; message.deleted and the cursor stay", async () => {
    h = await startGateway({
      storage: make(),
      runtime: scriptedRuntime(async function* (input) {
        yield {
          type: "text",
          delta: input.message.text === "the password is hunter2" ? "noted, hidden answer" : "ok",
        } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    const { echo, final } = await a.say({ chat_id: "default", text: "the password is hunter2" });
    await a.say({ chat_id: "default", text: "unrelated" });
    await a.request("message.delete", {
      chat_id: "default",
      message_ids: [echo.payload.message_id, final.payload.message_id],
    });
    const last = Math.max(...a.frames.map((f) => f.seq ?? 0));

    const late = await Client.connect(h.url, { device_id: "late" });
    const done = await late.request("sync", { cursor: 0 });
    const replayed = late.frames.filter((f) => f.seq !== undefined);
    const text = JSON.stringify(replayed);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("hidden answer");
    expect(replayed.map((f) => f.type)).toEqual(["message", "message.stop", "message.deleted"]);
    expect(replayed[0].payload.text).toBe("unrelated");
    expect(done.payload).toEqual({ cursor: last });
  });

  it("delete - a deleted channel's frames (its name, its messages, its threads') replay as nothing", async () => {
    h = await startGateway({
      storage: make(),
      runtime: scriptedRuntime(async function* () {
        yield { type: "text", delta: "ok" } as RuntimeEvent;
      }),
    });
    const a = await Client.connect(h.url);
    const created = await a.request("channel.create", { name: "Project Nightingale", kind: "channel" });
    const chat = created.payload.chat_id as string;
    await a.say({ chat_id: chat, text: "nightingale budget is 4M" });
    await a.say({ chat_id: chat, text: "nightingale thread talk", auto_thread: true });
    await a.say({ chat_id: "default", text: "kept words" });
    expect((await a.request("channel.delete", { chat_id: chat })).type).toBe("channel.deleted");

    const late = await Client.connect(h.url, { device_id: "late" });
    const done = await late.request("sync", { cursor: 0 });
    const replayed = late.frames.filter((f) => f.seq !== undefined);
    expect(JSON.stringify(replayed).toLowerCase()).not.toContain("nightingale");
    expect(replayed.filter((f) => f.type === "message").map((f) => f.payload.text)).toEqual(["kept words"]);
    expect(replayed.filter((f) => f.type === "channel.deleted")).toHaveLength(2);
    expect(done.payload.cursor).toBe(Math.max(...a.frames.map((f) => f.seq ?? 0)));
  });
});
