import { describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type RuntimeEvent } from "chat-gateway";
import { Client, gatewayPerTest } from "./harness.js";
import { sleep } from "./runtimes.js";

const startGateway = gatewayPerTest();

describe("automation channels and notifications", () => {
  it("automation - message.send is refused and nothing is stored; gateway.post streams into it like assistant output", async () => {
    const h = await startGateway();
    const c = await Client.connect(h.url);
    const auto = await h.gateway.channels.create(ANONYMOUS_OWNER, { name: "Nightly", automation: true });
    const created = await c.waitFor((f) => f.type === "channel.created");
    expect(created.payload).toMatchObject({ automation: true, kind: "channel" });
    const refused = await c.request("message.send", { chat_id: auto.chat_id, text: "hi" });
    expect(refused.payload.code).toBe("unsupported");
    const posted = await h.gateway.post(ANONYMOUS_OWNER, auto.chat_id, { text: "Backup finished: 3 GB" });
    expect(posted).toMatchObject({ role: "assistant", text: "Backup finished: 3 GB", status: "complete" });
    const stop = await c.waitFor((f) => f.type === "message.stop" && f.payload.chat_id === auto.chat_id);
    expect(stop.payload.final_text).toBe("Backup finished: 3 GB");
    expect(stop.payload.runtime).toBeDefined();
    const streamed = h.gateway.post(ANONYMOUS_OWNER, auto.chat_id, {
      events: (async function* () {
        yield { type: "text", delta: "part 1, " } as RuntimeEvent;
        await sleep(80);
        yield { type: "text", delta: "part 2" } as RuntimeEvent;
      })(),
    });
    const done = await streamed;
    const last = await c.waitFor((f) => f.type === "message.stop" && f.payload.message_id === done.message_id);
    expect(last.payload.final_text).toBe("part 1, part 2");
    expect(c.of("message.update").length).toBeGreaterThan(0);
    const hist = await c.request("history", { chat_id: auto.chat_id });
    expect(hist.payload.messages.map((m: any) => m.role)).toEqual(["assistant", "assistant"]);
    await expect(
      h.gateway.channels.create(ANONYMOUS_OWNER, {
        name: "bad",
        kind: "thread",
        parent_chat_id: "default",
        automation: true,
      }),
    ).rejects.toMatchObject({ code: "unsupported" });
  });

  it("notifications - gateway.notify reaches every device, is stored, and replays on sync", async () => {
    const h = await startGateway();
    const a = await Client.connect(h.url);
    const b = await Client.connect(h.url);
    const seq = await h.gateway.notify(ANONYMOUS_OWNER, {
      kind: "approval",
      title: "Approve deploy?",
      body: "prod, v2.3",
      ts: 123,
    });
    for (const c of [a, b]) {
      const n = await c.waitFor((f) => f.type === "notification");
      expect(n).toMatchObject({
        seq,
        payload: { kind: "approval", title: "Approve deploy?", body: "prod, v2.3", ts: 123 },
      });
    }
    const later = await Client.connect(h.url);
    await later.request("sync", { cursor: seq - 1 });
    expect(later.of("notification")).toHaveLength(1);
  });
});
