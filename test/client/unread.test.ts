// The typed client and read state (docs/PROTOCOL.md §15) against a real gateway on a real ws:
// markRead sends `read`, every device gets the `read` event, and unread counts from channel.list
// follow new answers and reads of any device live.
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createGatewayClient, type GatewayClient } from "chat-gateway/client";
import type { ServerFrame } from "chat-gateway/protocol";
import { startGateway, type Harness } from "../gateway/harness.js";
import { until } from "./helpers.js";

let harness: Harness | undefined;
const clients: GatewayClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await harness?.close();
  harness = undefined;
});

function client(url: string, deviceId: string): GatewayClient {
  const c = createGatewayClient({ url, deviceId, WebSocket: WebSocket as never, pingIntervalMs: 0 });
  clients.push(c);
  return c;
}

/** Sends `text` in the lane and resolves with its answer's `message.stop` as `on` sees it. */
async function answered(
  from: GatewayClient,
  on: GatewayClient,
  lane: { chat_id: string; thread_id?: string | null },
  text: string,
): Promise<ServerFrame<"message.stop">> {
  const stop = new Promise<ServerFrame<"message.stop">>((resolve) => {
    const seen = (_p: unknown, frame: ServerFrame<"message.stop">) => {
      if (frame.payload.final_text.includes(text)) {
        on.off("message.stop", seen);
        resolve(frame);
      }
    };
    on.on("message.stop", seen);
  });
  await from.sendMessage({ chat_id: lane.chat_id, ...(lane.thread_id ? { thread_id: lane.thread_id } : {}), text });
  return stop;
}

describe("typed client - read state", () => {
  it("client - markRead reaches every device as a read event; unread counts follow answers and reads live on both", async () => {
    harness = await startGateway();
    const phone = client(harness.url, "phone");
    const laptop = client(harness.url, "laptop");
    await Promise.all([phone.connect(), laptop.connect()]);
    const side = await phone.request("channel.create", { name: "Side", kind: "thread", parent_chat_id: "default" });
    await Promise.all([phone.request("channel.list", {}), laptop.request("channel.list", {})]);
    expect(laptop.unreadCounts()).toMatchObject({ default: 0, [side.chat_id]: 0 });

    const one = await answered(phone, laptop, { chat_id: "default" }, "one");
    const two = await answered(phone, laptop, { chat_id: "default" }, "two");
    await answered(phone, laptop, { chat_id: "default", thread_id: side.chat_id }, "three");
    await until(() => phone.unreadCounts().default === 3, "phone.unreadCounts().default === 3");
    expect(laptop.unreadCounts()).toMatchObject({ default: 3, [side.chat_id]: 1 });

    // Reading the newest answer of the flat lane clears it on every device; the thread's stays.
    const reads: Array<{ device_id: string; message_id: string }> = [];
    phone.on("read", (p) => reads.push({ device_id: p.device_id, message_id: p.message_id }));
    await laptop.markRead({ chat_id: "default", thread_id: null }, two.payload.message_id);
    await until(() => phone.unreadCounts().default === 1, "phone.unreadCounts().default === 1");
    expect(reads).toEqual([{ device_id: "laptop", message_id: two.payload.message_id }]);
    expect(laptop.unreadCounts()).toMatchObject({ default: 1, [side.chat_id]: 1 });

    // An older answer: the watermark does not move back, nothing is sent, the counts stand.
    await phone.markRead({ chat_id: "default", thread_id: null }, one.payload.message_id);
    await phone.request("ping", {});
    expect(reads).toHaveLength(1);

    const changes: Array<Record<string, number>> = [];
    laptop.on("unread", (counts) => changes.push(counts));
    const three = (
      await laptop.request("history", { chat_id: "default", thread_id: side.chat_id, limit: 5 })
    ).messages.at(-1)!;
    await phone.markRead({ chat_id: "default", thread_id: side.chat_id }, three.message_id);
    await until(() => laptop.unreadCounts().default === 0, "laptop.unreadCounts().default === 0");
    expect(laptop.unreadCounts()).toMatchObject({ default: 0, [side.chat_id]: 0 });
    expect(changes.at(-1)).toMatchObject({ default: 0, [side.chat_id]: 0 });
  });

  it("client - a read of an older answer asks the gateway again: the count is what channel.list says", async () => {
    harness = await startGateway();
    const phone = client(harness.url, "phone");
    const laptop = client(harness.url, "laptop");
    await Promise.all([phone.connect(), laptop.connect()]);
    await laptop.request("channel.list", {});
    const one = await answered(phone, laptop, { chat_id: "default" }, "first");
    await answered(phone, laptop, { chat_id: "default" }, "second");
    await until(() => laptop.unreadCounts().default === 2, "laptop.unreadCounts().default === 2");
    await phone.markRead({ chat_id: "default", thread_id: null }, one.payload.message_id);
    await until(() => laptop.unreadCounts().default === 1, "laptop.unreadCounts().default === 1");
    // Another device's error does not reach this one; the counts stand.
    const errors: string[] = [];
    phone.on("error", (p) => errors.push(p.code));
    await phone.markRead({ chat_id: "default", thread_id: null }, "m-nope");
    await until(() => errors.length === 1, "errors.length === 1");
    expect(errors).toEqual(["not_found"]);
    expect(laptop.unreadCounts().default).toBe(1);
  });
});
