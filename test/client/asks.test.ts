// The typed client and the agent's asks (docs/PROTOCOL.md §11), against the example server and its
// demo runtime, which asks on `approve: X`, `ask: Q` and `model:`.
import { describe, expect, it } from "vitest";
import {
  approveCommand,
  answerCommand,
  createGatewayClient,
  isClientError,
  memoryCursorStore,
  memoryOpenAsksStore,
  type GatewayClient,
  type GatewayClientOptions,
  type OpenAsk,
} from "chat-gateway/client";
import type { ServerFrame } from "chat-gateway/protocol";
import type { RunningServer } from "../../examples/server/server.js";
import { cleanupAfterEach, exampleServer, testClient, until, wsUrl } from "./helpers.js";

const cleanups = cleanupAfterEach();
const example = () => exampleServer(cleanups);
const device = (server: RunningServer, options: Partial<GatewayClientOptions> = {}) =>
  testClient(cleanups, wsUrl(server), options);

const lane = { chat_id: "default", thread_id: null };

/** The next time the client's open asks include one of this kind. */
function nextAsk(c: GatewayClient, kind: OpenAsk["kind"]): Promise<OpenAsk> {
  return until(() => c.openAsks(lane).find((a) => a.kind === kind), `an open ${kind} ask`);
}

function finalText(frames: ServerFrame[]): Promise<string> {
  return until(
    () => frames.findLast((f) => f.type === "message.stop")?.payload as { final_text: string } | undefined,
    "the answer",
  ).then((p) => p.final_text);
}

describe("client - asks", () => {
  it("declares caps.pickers, tracks an approval as an open ask, and select() answers it", async () => {
    const server = await example();
    const { client: c, frames } = device(server);
    await c.connect();
    await c.ready();
    const changes: number[] = [];
    c.on("asks", (open) => changes.push(open.length));
    await c.sendMessage({ ...lane, text: "approve: hello" });
    const ask = await nextAsk(c, "approval");
    expect(ask).toMatchObject({
      kind: "approval",
      chat_id: "default",
      thread_id: null,
      tool: { name: "echo", args: { text: "hello" } },
    });
    expect(ask.expires_at).toBeGreaterThan(Date.now());
    const resolved = await c.select(ask.picker_id, { option_id: "approve" });
    expect(resolved).toMatchObject({
      picker_id: ask.picker_id,
      outcome: "selected",
      option_id: "approve",
      device_id: c.deviceId,
    });
    expect(c.openAsks()).toEqual([]);
    expect(await finalText(frames)).toBe("You said: hello");
    expect(changes).toEqual([1, 0]);
  });

  it("an answer from another device closes the ask on this one; a late select gets the outcome that stands", async () => {
    const server = await example();
    const phone = device(server).client;
    const laptop = device(server).client;
    await Promise.all([phone.connect(), laptop.connect()]);
    await Promise.all([phone.ready(), laptop.ready()]);
    await phone.sendMessage({ ...lane, text: "ask: tea or coffee?" });
    const [onPhone, onLaptop] = await Promise.all([nextAsk(phone, "confirm"), nextAsk(laptop, "confirm")]);
    expect(onLaptop.picker_id).toBe(onPhone.picker_id);
    expect(onLaptop).toMatchObject({ allow_text: true, options: [{ id: "yes" }, { id: "no" }] });
    await phone.select(onPhone.picker_id, { text: "tea, please" });
    await until(() => laptop.openAsks().length === 0, "the laptop's card closed");
    const late = await laptop.select(onLaptop.picker_id, { option_id: "no" });
    expect(late).toMatchObject({ outcome: "selected", text: "tea, please", device_id: phone.deviceId });
  });

  it("refuses an unknown ask with not_found and an option that was not offered with unsupported", async () => {
    const server = await example();
    const { client: c } = device(server);
    await c.connect();
    await c.ready();
    await expect(c.select("pk-nope", { option_id: "approve" })).rejects.toSatisfy((e) => isClientError(e, "not_found"));
    await c.sendMessage({ ...lane, text: "approve: x" });
    const ask = await nextAsk(c, "approval");
    await expect(c.select(ask.picker_id, { option_id: "maybe" })).rejects.toSatisfy((e) =>
      isClientError(e, "unsupported"),
    );
    expect(c.openAsks(lane)).toHaveLength(1);
    await c.select(ask.picker_id, { option_id: "deny" });
  });

  it("open asks survive a restart of the client: kept in its store, closed by the sync when answered meanwhile", async () => {
    const server = await example();
    const cursor = memoryCursorStore();
    const asks = memoryOpenAsksStore();
    const deviceId = "tablet";
    const first = device(server, { deviceId, cursorStore: cursor, openAsksStore: asks }).client;
    await first.connect();
    await first.ready();
    await first.sendMessage({ ...lane, text: "approve: one" });
    const one = await nextAsk(first, "approval");
    first.close();

    // Back on: the frame that opened the ask is before the stored cursor, so only the store knows it.
    const second = device(server, { deviceId, cursorStore: cursor, openAsksStore: asks }).client;
    expect(second.openAsks().map((a) => a.picker_id)).toEqual([one.picker_id]);
    await second.connect();
    await second.ready();
    expect(second.openAsks().map((a) => a.picker_id)).toEqual([one.picker_id]);
    second.close();

    // Answered elsewhere while this device is away: its sync replays picker.resolved.
    const other = device(server).client;
    await other.connect();
    await other.select(one.picker_id, { option_id: "approve" });
    const third = device(server, { deviceId, cursorStore: cursor, openAsksStore: asks }).client;
    await third.connect();
    await third.ready();
    expect(third.openAsks()).toEqual([]);
  });

  it("a model picker is answered by its model id, and complete() offers the ids", async () => {
    const server = await example();
    const { client: c, frames } = device(server);
    await c.connect();
    await c.ready();
    const completions = await c.complete(lane, "/model demo-f");
    expect(completions.map((x) => x.value)).toContain("/model demo-fast");
    expect(await c.complete(lane, "hello")).toEqual([]);
    await c.sendMessage({ ...lane, text: "model:" });
    const ask = await nextAsk(c, "model");
    expect(ask.kind === "model" && ask.models.map((m) => m.id)).toEqual(["demo", "demo-fast"]);
    await c.select(ask.picker_id, { option_id: "demo-fast" });
    expect(await finalText(frames)).toBe("Model: demo-fast");
  });

  it("keeps only well-formed asks from its store, and none past the store's bound", () => {
    const ask = {
      kind: "approval",
      picker_id: "pk1",
      chat_id: "default",
      thread_id: null,
      message_id: "m1",
      title: "Run?",
      body: "",
      options: [],
      expires_at: Date.now() + 60_000,
    };
    const junk = [null, 7, "x", { ...ask, picker_id: 9 }, { ...ask, kind: "bribe" }, { ...ask, expires_at: "soon" }];
    const store = { get: () => [...junk, ask], set: () => undefined };
    const c = createGatewayClient({ url: "ws://127.0.0.1:9/ws/gateway", openAsksStore: store });
    expect(c.openAsks().map((a) => a.picker_id)).toEqual(["pk1"]);
    const many = Array.from({ length: 500 }, (_, i) => ({ ...ask, picker_id: `pk${i}` }));
    const crowded = createGatewayClient({
      url: "ws://127.0.0.1:9/ws/gateway",
      openAsksStore: { get: () => many, set: () => undefined },
    });
    expect(crowded.openAsks()).toHaveLength(200);
    const broken = createGatewayClient({
      url: "ws://127.0.0.1:9/ws/gateway",
      openAsksStore: {
        get: () => {
          throw new Error("disk");
        },
        set: () => undefined,
      },
    });
    expect(broken.openAsks()).toEqual([]);
  });

  it("without caps.pickers the device gets a notification and answers by slash command", async () => {
    const server = await example();
    const { client: c, frames } = device(server, { pickers: false });
    await c.connect();
    await c.ready();
    await c.sendMessage({ ...lane, text: "ask: which one?" });
    const note = await until(
      () => frames.find((f) => f.type === "notification")?.payload as { kind: string; picker_id?: string } | undefined,
      "a notification",
    );
    expect(note).toMatchObject({ kind: "clarify" });
    expect(frames.some((f) => f.type.startsWith("picker."))).toBe(false);
    expect(c.openAsks()).toEqual([]);
    await c.sendMessage({ ...lane, text: answerCommand("the blue one") });
    expect(await finalText(frames)).toBe("You answered: the blue one");
    expect(approveCommand()).toBe("/approve");
    expect(approveCommand(" pk1 ")).toBe("/approve pk1");
  });
});
