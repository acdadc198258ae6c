import { describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { Client, gatewayPerTest } from "./harness.js";

const startGateway = gatewayPerTest();

describe("search", () => {
  it("search - scope all and chat (thread-aware), limit default and clamp, snippets, best match first", async () => {
    const h = await startGateway({ rateLimit: { perSecond: 1000, burst: 1000 } });
    const c = await Client.connect(h.url);
    const work = (await c.request("channel.create", { name: "Work", kind: "channel" })).payload.chat_id;
    const th = (await c.request("channel.create", { name: "T", kind: "thread", parent_chat_id: work })).payload.chat_id;
    await c.say({ chat_id: "default", text: "zebra in the default lane" });
    await c.say({ chat_id: work, text: "zebra at work" });
    await c.say({ chat_id: th, text: "zebra zebra in a thread" });
    const all = await c.request("search", { query: "zebra", scope: "all" });
    expect(all.payload).toMatchObject({ query: "zebra", scope: "all" });
    expect(all.payload.hits.length).toBe(6);
    for (const hit of all.payload.hits) {
      expect(Object.keys(hit).sort()).toEqual(["chat_id", "message_id", "role", "snippet", "thread_id", "ts"]);
      expect(hit.snippet.length).toBeLessThanOrEqual(200);
      expect(hit.snippet.toLowerCase()).toContain("zebra");
    }
    expect(all.payload.hits[0].snippet).toContain("zebra zebra");
    const chat = await c.request("search", { query: "zebra", scope: "chat", chat_id: work });
    expect(new Set(chat.payload.hits.map((x: any) => x.thread_id))).toEqual(new Set([null, th]));
    const thread = await c.request("search", { query: "zebra", scope: "chat", chat_id: work, thread_id: th });
    expect(thread.payload.hits.every((x: any) => x.thread_id === th && x.chat_id === work)).toBe(true);
    expect(thread.payload.hits).toHaveLength(2);
    expect((await c.request("search", { query: "zebra", scope: "all", limit: 1 })).payload.hits).toHaveLength(1);
    expect((await c.request("search", { query: "zebra", scope: "all", limit: 0 })).payload.code).toBe("unsupported");
    expect((await c.request("search", { query: "   ", scope: "all" })).payload.hits).toEqual([]);
    expect((await c.request("search", { query: "zebra", scope: "chat" })).payload.code).toBe("unsupported");
    expect((await c.request("search", { query: "zebra", scope: "chat", chat_id: "nope" })).payload.code).toBe(
      "not_found",
    );
    expect((await c.request("search", { query: 'zeb* "unbalanced (', scope: "all" })).type).toBe("search.results");
  });

  it("search - limit default 20 and clamp to search_max", async () => {
    const h = await startGateway({ searchMax: 30 });
    const storage = (h.gateway.options as any).storage;
    await storage.commit(ANONYMOUS_OWNER, {
      messages: Array.from({ length: 60 }, (_, i) => ({
        message_id: `m${i}`,
        role: "user",
        text: `needle ${i}`,
        reasoning: "",
        ts: i,
        media: [],
        chat_id: "default",
        thread_id: null,
      })),
    });
    const c = await Client.connect(h.url);
    expect(c.frames[0].payload.limits.search_max).toBe(30);
    expect((await c.request("search", { query: "needle", scope: "all" })).payload.hits).toHaveLength(20);
    expect((await c.request("search", { query: "needle", scope: "all", limit: 999 })).payload.hits).toHaveLength(30);
  });
});
