// Text PostgreSQL cannot take (a lone surrogate, "\ud83d" in JSON) over the wire to a gateway on
// PostgreSQL: every text field of every frame is refused `unsupported` with the request's id,
// never `internal`, nothing is stored, and the connection goes on (docs/PROTOCOL.md §1). Code
// calling the storage directly gets `unsupported` too, before anything reaches the database.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { isGatewayError } from "chat-gateway/protocol";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { Client, startGateway, type Harness } from "../gateway/harness.js";

const available = await postgresAvailable("lone surrogates on postgres");
const LONE = "\ud83d";

describe.skipIf(!available)("lone surrogates on postgres", () => {
  const schema = `t_${runId()}`;
  let h: Harness;
  let storage: Storage;
  let device: Client;
  let chatId: string;
  let messageId: string;
  let channelNames: string[];
  let historyIds: string[];

  async function lane(): Promise<string[]> {
    const history = await device.request("history", { chat_id: chatId });
    return history.payload.messages.map((m: { message_id: string }) => m.message_id);
  }

  async function names(): Promise<string[]> {
    const channels = (await device.request("channel.list", {})).payload.channels as Array<{ name: string }>;
    return channels.map((c) => c.name).sort();
  }

  beforeAll(async () => {
    storage = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 4 });
    // One device sends the 21 cases and their checks, some 90 frames, faster than the default
    // budget (burst 60, 20/s) on an idle machine: this file is about text, not budgets.
    h = await startGateway({ storage, rateLimit: { perSecond: 1000, burst: 1000 } });
    device = await Client.connect(h.url);
    chatId = (await device.request("channel.create", { name: "Ok", kind: "channel" })).payload.chat_id;
    messageId = (await device.say({ chat_id: chatId, text: "kept" })).echo.payload.message_id;
    channelNames = await names();
    historyIds = await lane();
    expect(historyIds).toContain(messageId);
  });

  afterAll(async () => {
    await device?.close();
    await h?.close();
    await dropSchema(schema);
  });

  /** One case a field: the frame with a lone surrogate in that field (alone, or inside other text). */
  const cases: Array<[string, () => Record<string, unknown>]> = [
    ["channel.create", () => ({ name: LONE, kind: "channel" })],
    ["channel.create", () => ({ name: `a${LONE}b`, kind: "thread", parent_chat_id: chatId })],
    ["channel.create", () => ({ name: "fine", kind: "channel", icon: LONE })],
    ["channel.create", () => ({ name: "fine", kind: "channel", color: LONE })],
    ["channel.update", () => ({ chat_id: chatId, name: LONE })],
    ["channel.update", () => ({ chat_id: chatId, icon: LONE })],
    ["channel.update", () => ({ chat_id: LONE, name: "x" })],
    ["channel.delete", () => ({ chat_id: LONE })],
    ["message.send", () => ({ chat_id: chatId, text: `hi ${LONE}` })],
    ["message.send", () => ({ chat_id: chatId, text: "hi", client_msg_id: LONE })],
    ["message.send", () => ({ chat_id: LONE, text: "hi" })],
    ["message.send", () => ({ chat_id: chatId, thread_id: LONE, text: "hi" })],
    ["message.send", () => ({ chat_id: chatId, text: "hi", reply_to: LONE })],
    ["message.delete", () => ({ chat_id: chatId, message_ids: [LONE] })],
    ["search", () => ({ query: LONE, scope: "all" })],
    ["search", () => ({ query: "kept", scope: "chat", chat_id: LONE })],
    ["history", () => ({ chat_id: chatId, before_message_id: LONE })],
    ["read", () => ({ chat_id: chatId, message_id: LONE })],
    ["commands.complete", () => ({ chat_id: chatId, text: `/${LONE}` })],
    ["picker.select", () => ({ picker_id: LONE, text: "x" })],
    ["turn.stop", () => ({ chat_id: LONE })],
  ];

  it.each(cases.map(([type, payload], i) => ({ type, payload, i })))(
    "$type #$i with a lone surrogate is refused unsupported with its id, and nothing is stored",
    async ({ type, payload }) => {
      const answer = await device.request(type, payload());
      expect([answer.type, answer.payload.code]).toEqual(["error", "unsupported"]);
      expect((await device.request("ping", { ts: 7 })).payload.ts).toBe(7);
      expect(await names()).toEqual(channelNames);
      expect(await lane()).toEqual(historyIds);
    },
  );

  it("a hello with a lone surrogate in device_name is refused as an invalid first frame (auth), and no device is stored", async () => {
    const c = new Client(h.url);
    await c.opened;
    c.send("hello", { token: "", device_id: "d-lone", device_name: `phone ${LONE}` }, "h1");
    const answer = await c.waitFor((f) => f.id === "h1");
    expect([answer.type, answer.payload.code]).toEqual(["error", "auth"]);
    expect(answer.payload.message).toContain("lone surrogate");
    await c.closedPromise;
    expect((await storage.listDevices(ANONYMOUS_OWNER)).map((d) => d.device_id)).not.toContain("d-lone");
  });

  it("storage calls with a lone surrogate reject unsupported, before the database sees them", async () => {
    const refused = async (call: Promise<unknown>) => {
      const error = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isGatewayError(error) ? error.code : error).toBe("unsupported");
    };
    await refused(
      storage.putDevice(ANONYMOUS_OWNER, { device_id: "d1", device_name: LONE, caps: {}, last_seen: 1 } as never),
    );
    await refused(storage.getChannel(ANONYMOUS_OWNER, LONE));
    await refused(storage.listChannels(LONE));
    expect((await storage.listDevices(ANONYMOUS_OWNER)).some((d) => d.device_id === "d1")).toBe(false);
  });
});
