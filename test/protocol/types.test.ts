// The types chat-gateway/protocol derives from its structs: what a client's code is checked against.
import { describe, expectTypeOf, it } from "vitest";
import type { Channel, HistoryItem } from "chat-gateway";
import type {
  ClientPayloads,
  ErrorCode,
  ResponsePayload,
  ServerFrame,
  ServerPayloads,
  ErrorCode as RootErrorCode,
} from "chat-gateway/protocol";
import { parseServerFrame } from "chat-gateway/protocol";

describe("protocol types", () => {
  it("derives each payload from its struct", () => {
    expectTypeOf<ServerPayloads["typing"]>().toEqualTypeOf<{
      on: boolean;
      chat_id: string;
      thread_id: string | null;
    }>();
    expectTypeOf<ServerPayloads["history"]["messages"]>().toExtend<HistoryItem[]>();
    expectTypeOf<ServerPayloads["channel.created"]>().toExtend<Channel>();
    expectTypeOf<ServerPayloads["error"]["code"]>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<ErrorCode>().toEqualTypeOf<RootErrorCode>();
    expectTypeOf<ClientPayloads["message.delete"]["message_ids"]>().toEqualTypeOf<string[]>();
    expectTypeOf<ResponsePayload<"search">>().toEqualTypeOf<ServerPayloads["search.results"]>();
    expectTypeOf(parseServerFrame).returns.toEqualTypeOf<ServerFrame | undefined>();
    // @ts-expect-error: message.stop has no `text`; the stored final text is `final_text`
    const wrong: ServerPayloads["message.stop"]["text"] = "";
    void wrong;
  });
});
