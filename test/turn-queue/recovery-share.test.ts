// Recovery takes up a lane's waiting messages with one job for the lane (docs/PROTOCOL.md §4.2),
// not one per message: a gateway restarted over a long queue answers it in order, once each, and
// the owner's bound on turns in flight counts that one job, so the owner can still send.
import { afterEach, describe, expect, test } from "vitest";
import { memoryLaneLock } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { Client, startGateway, type Harness } from "../gateway/harness.js";

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close().catch(() => undefined);
});

async function gateway(storage: ReturnType<typeof memoryStorage>, delayMs: number): Promise<Harness> {
  const h = await startGateway({
    storage,
    laneLock: memoryLaneLock(),
    runtime: demoRuntime({ delayMs }),
    maxTurnsPerOwner: 4,
    recoveryIntervalMs: 60_000,
  });
  open.push(h);
  return h;
}

describe("turn queue - recovery", () => {
  test("recovery - restarts over a lane of waiting messages answer them once each, in order, and the owner can still send", async () => {
    const storage = memoryStorage();
    const first = await gateway(storage, 1_000);
    const device = await Client.connect(first.url);
    const sent: string[] = [];
    // One turn running, three waiting: the owner's bound of four is reached on this gateway.
    for (let i = 0; i < 4; i++) {
      const echo = await device.request("message.send", { chat_id: "default", text: `m${i}`, client_msg_id: `m${i}` });
      expect(echo.type).toBe("message");
      sent.push(echo.payload.message_id as string);
    }
    // Shut down: the running answer ends interrupted, the three waiting messages stay stored waiting.
    await first.close();
    open.splice(open.indexOf(first), 1);
    // A second gateway on the same storage takes them up as one job, so the owner can send three more
    // (four in flight, its bound) before this gateway is stopped too.
    const second = await gateway(storage, 1_000);
    const other = await Client.connect(second.url);
    for (let i = 4; i < 7; i++) {
      const echo = await other.request("message.send", { chat_id: "default", text: `m${i}`, client_msg_id: `m${i}` });
      expect(echo.type, JSON.stringify(echo.payload)).toBe("message");
      sent.push(echo.payload.message_id as string);
    }
    await second.close();
    open.splice(open.indexOf(second), 1);

    const third = await gateway(storage, 20);
    const again = await Client.connect(third.url);
    // Recovery queued the lane's waiting messages as one job: the owner is within its bound.
    const late = await again.request("message.send", { chat_id: "default", text: "late", client_msg_id: "late" });
    expect(late.type, JSON.stringify(late.payload)).toBe("message");
    sent.push(late.payload.message_id as string);
    const deadline = Date.now() + 30_000;
    let messages: Array<Record<string, any>> = [];
    for (;;) {
      const page = await again.request("history", { chat_id: "default", limit: 200 });
      messages = page.payload.messages as Array<Record<string, any>>;
      const ended = messages.filter((m) => m.role === "assistant" && m.status !== "streaming");
      if (ended.length >= sent.length && !messages.some((m) => m.status === "streaming")) break;
      if (Date.now() > deadline) throw new Error(`not settled: ${JSON.stringify(messages)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const answers = messages.filter((m) => m.role === "assistant");
    expect(answers.map((a) => a.reply_to)).toEqual(sent);
  });
});
