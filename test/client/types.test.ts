// The client's public types: events carry their frame's payload; requests resolve to their response's payload.
import { describe, expectTypeOf, it } from "vitest";
import type { Channel, HistoryItem } from "chat-gateway";
import type { GatewayClient, HistoryPayload, MessageStopPayload, ToolEndPayload } from "chat-gateway/client";
import type { ServerFrame } from "chat-gateway/protocol";

describe("client types", () => {
  it("maps events and requests to their payloads", () => {
    expectTypeOf<GatewayClient["request"]>().toBeFunction();
    expectTypeOf<ReturnType<GatewayClient["request"]>>().toExtend<Promise<unknown>>();
    expectTypeOf<ToolEndPayload["duration"]>().toEqualTypeOf<number>();
    // Wire shapes: usable wherever the records are (the wire channel has no storage-only created_ts).
    expectTypeOf<HistoryPayload["messages"]>().toExtend<HistoryItem[]>();
    const check = async (client: GatewayClient) => {
      const list = await client.request("channel.list", {});
      expectTypeOf(list.channels).toExtend<Channel[]>();
      const page = await client.request("history", { chat_id: "default" });
      expectTypeOf(page.oldest_message_id).toEqualTypeOf<string | null>();
      client.on("message.stop", (payload, frame) => {
        expectTypeOf(payload).toEqualTypeOf<MessageStopPayload>();
        expectTypeOf(frame).toEqualTypeOf<ServerFrame<"message.stop">>();
      });
      client.on("tool.end", (payload) => expectTypeOf(payload.ok).toEqualTypeOf<boolean>());
      client.on("state", (state) =>
        expectTypeOf(state).toEqualTypeOf<
          "connecting" | "syncing" | "open" | "reconnecting" | "unauthorized" | "closed"
        >(),
      );
      // @ts-expect-error: history needs a chat_id
      await client.request("history", {});
    };
    void check;
  });
});
