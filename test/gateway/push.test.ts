import { describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type RuntimeEvent } from "chat-gateway";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { Client, gatewayPerTest } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";
import { recordingServer } from "../push/recording-server.js";

const startGateway = gatewayPerTest();

describe("push", () => {
  it("push - a final answer and a notification for an owner with no connected device go to each device with a target", async () => {
    let failFirst = true;
    const ntfy = await recordingServer(() => {
      if (!failFirst) return { json: {} };
      failFirst = false;
      return { status: 503 };
    });
    try {
      const later = gate();
      const h = await startGateway({
        push: [ntfyPushSender({ baseUrl: ntfy.url })],
        pushRetry: { attempts: 3, backoffMs: 20 },
        runtime: scriptedRuntime(async function* (input) {
          if (input.message.text === "answer me later") await later.wait;
          yield { type: "text", delta: `You said: ${input.message.text}` } as RuntimeEvent;
        }),
      });
      const phone = await Client.connect(h.url, {
        device_id: "phone",
        ntfy_topic: "ann-phone",
        caps: { push: "ntfy" },
      });
      await Client.connect(h.url, { device_id: "laptop" }).then((c) => c.close());
      // connected: no push
      await phone.say({ chat_id: "default", text: "while here" });
      await sleep(100);
      expect(ntfy.requests).toEqual([]);
      await phone.request("message.send", { chat_id: "default", text: "answer me later" });
      await phone.close();
      await sleep(50);
      later.release();
      // The answer's push and its retry, before the notification (a loaded machine takes its time).
      for (let i = 0; i < 1000 && ntfy.requests.length < 2; i++) await sleep(10);
      await h.gateway.notify(ANONYMOUS_OWNER, { kind: "cron", title: "Daily digest", body: "3 new items" });
      for (let i = 0; i < 1000 && ntfy.requests.length < 3; i++) await sleep(10);
      await sleep(100);
      // The first attempt is refused with 503 and retried.
      expect(ntfy.requests.map((r) => r.url)).toEqual(["/ann-phone", "/ann-phone", "/ann-phone"]);
      expect(ntfy.requests[1].body).toContain("You said: answer me later");
      expect(ntfy.requests[2]).toMatchObject({ headers: { title: "Daily digest" }, body: "3 new items" });
    } finally {
      await ntfy.close();
    }
  });

  it("push - caps.push is honoured: a device that declares none, or a channel it has no target for, gets no push", async () => {
    const ntfy = await recordingServer();
    try {
      const h = await startGateway({
        push: [ntfyPushSender({ baseUrl: ntfy.url })],
        pushRetry: { attempts: 0, backoffMs: 1 },
      });
      await Client.connect(h.url, {
        device_id: "quiet",
        ntfy_topic: "quiet-topic",
        fcm_token: "quiet-token",
        caps: { push: "none" },
      }).then((c) => c.close());
      await Client.connect(h.url, { device_id: "undeclared", ntfy_topic: "undeclared-topic" }).then((c) => c.close());
      await Client.connect(h.url, { device_id: "fcm-only", ntfy_topic: "fcm-only-topic", caps: { push: "fcm" } }).then(
        (c) => c.close(),
      );
      await Client.connect(h.url, { device_id: "loud", ntfy_topic: "loud-topic", caps: { push: "ntfy" } }).then((c) =>
        c.close(),
      );
      await sleep(50);
      await h.gateway.notify(ANONYMOUS_OWNER, { kind: "cron", title: "Digest", body: "2 items" });
      await h.gateway.post(ANONYMOUS_OWNER, "default", { text: "posted while away" });
      const deadline = Date.now() + 2000;
      while (ntfy.requests.length < 2 && Date.now() < deadline) await sleep(20);
      await sleep(100);
      expect(ntfy.requests.map((r) => r.url)).toEqual(["/loud-topic", "/loud-topic"]);
    } finally {
      await ntfy.close();
    }
  });
});
