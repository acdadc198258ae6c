import { describe, expect, it } from "vitest";
import { Client, gatewayPerTest } from "./harness.js";

const startGateway = gatewayPerTest();

describe("message.delete", () => {
  it("message.delete - answers, broadcasts, stores, and the messages are gone from history and search", async () => {
    const h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const { echo, final } = await a.say({ chat_id: "default", text: "forget this walrus" });
    await a.say({ chat_id: "default", text: "keep this" });
    const ids = [echo.payload.message_id, final.payload.message_id];
    const answer = await a.request("message.delete", { chat_id: "default", message_ids: ids });
    expect(answer).toMatchObject({
      type: "message.deleted",
      payload: { chat_id: "default", thread_id: null, message_ids: ids },
    });
    expect(answer.seq).toBeGreaterThan(0);
    const seen = await b.waitFor((f) => f.type === "message.deleted");
    expect(seen.id).toBeUndefined();
    const hist = (await a.request("history", { chat_id: "default" })).payload.messages.map((m: any) => m.message_id);
    expect(hist).not.toContain(ids[0]);
    expect(hist).toHaveLength(2);
    expect((await a.request("search", { query: "walrus", scope: "all" })).payload.hits).toEqual([]);
    const offline = await Client.connect(h.url);
    await offline.request("sync", { cursor: answer.seq! - 1 });
    expect(offline.of("message.deleted")).toHaveLength(1);
  });

  it("message.delete - an id not in that lane is not_found and nothing is deleted", async () => {
    const h = await startGateway();
    const a = await Client.connect(h.url);
    const th = (await a.request("channel.create", { name: "T", kind: "thread", parent_chat_id: "default" })).payload
      .chat_id;
    const inThread = (await a.say({ chat_id: th, text: "in thread" })).echo.payload.message_id;
    const flat = (await a.say({ chat_id: "default", text: "flat" })).echo.payload.message_id;
    const answer = await a.request("message.delete", { chat_id: "default", message_ids: [flat, inThread] });
    expect(answer.payload.code).toBe("not_found");
    expect(
      (await a.request("history", { chat_id: "default" })).payload.messages.map((m: any) => m.message_id),
    ).toContain(flat);
  });
});
