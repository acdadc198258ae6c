// Asking the person (docs/PROTOCOL.md §11), through the wire: a real gateway, real ws devices, the
// demo runtime asking as §11 says.
import { afterEach, describe, expect, it } from "vitest";
import { tokenAuthenticator } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { serverFrameProblem } from "chat-gateway/protocol";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";
import { scriptedRuntime, sleep } from "./runtimes.js";

let h: Harness | undefined;
const clients: Client[] = [];
afterEach(async () => {
  // Every frame any device got, cards and completions included, matches its protocol struct.
  for (const c of clients.splice(0))
    for (const f of c.frames) expect(serverFrameProblem(f), JSON.stringify(f)).toBeUndefined();
  await h?.close();
  h = undefined;
});

async function connect(url: string, hello: Record<string, unknown> = {}): Promise<Client> {
  const c = await Client.connect(url, hello);
  clients.push(c);
  return c;
}

const PICKERS = { caps: { pickers: true } };

/** Send text and wait for the picker card it raises on a pickers device. */
async function askVia(
  sender: Client,
  watcher: Client,
  text: string,
  type = "picker.approval",
): Promise<{ echo: Frame; card: Frame }> {
  const from = watcher.frames.length;
  const echo = await sender.request("message.send", { chat_id: "default", text });
  const card = await watcher.waitFor((f) => f.type === type, 5000, from);
  return { echo, card };
}

function finalOf(c: Client, echo: Frame): Promise<Frame> {
  return c.waitFor((f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id);
}

describe("asks", () => {
  it("asks - an approval reaches pickers devices as a card and the others as a notification; the first answer wins, a late one learns the outcome", async () => {
    h = await startGateway();
    const a = await connect(h.url, PICKERS);
    const b = await connect(h.url);
    const c = await connect(h.url, PICKERS);
    expect(a.frames[0]!.payload.features).toEqual(
      expect.arrayContaining(["pickers", "commands.complete", "client_msg_id", "channel.create"]),
    );
    expect(a.frames[0]!.payload.limits.picker_text_max).toBe(4000);
    const { echo, card } = await askVia(a, a, "approve: hello");
    expect(card.seq).toBeGreaterThan(echo.seq!);
    expect(card.payload).toMatchObject({
      chat_id: "default",
      thread_id: null,
      title: "Run echo?",
      tool: { name: "echo", args: { text: "hello" } },
      options: [{ id: "approve" }, { id: "deny" }],
    });
    expect(card.payload.expires_at).toBeGreaterThan(Date.now() + 9 * 60_000);
    const start = a.frames.find((f) => f.type === "message.start")!;
    expect(card.payload.message_id).toBe(start.payload.message_id);
    const note = await b.waitFor((f) => f.type === "notification");
    expect(note.payload).toMatchObject({
      kind: "approval",
      title: "Run echo?",
      chat_id: "default",
      thread_id: null,
      picker_id: card.payload.picker_id,
    });
    await a.waitFor((f) => f.type === "typing" && f.payload.on === false);
    const id = card.payload.picker_id;

    const [first, second] = await Promise.all([
      a.request("picker.select", { picker_id: id, option_id: "approve" }),
      c.request("picker.select", { picker_id: id, option_id: "deny" }),
    ]);
    expect(first.type).toBe("picker.resolved");
    expect(second.type).toBe("picker.resolved");
    expect(second.payload).toEqual(first.payload);
    expect(first.payload).toMatchObject({ picker_id: id, chat_id: "default", thread_id: null, outcome: "selected" });
    const winner = first.payload.option_id as string;
    const final = await finalOf(a, echo);
    expect(final.payload.final_text).toBe(winner === "approve" ? "You said: hello" : "Denied.");
    if (winner === "approve")
      expect(a.of("tool.start")[0]!.payload).toMatchObject({ name: "echo", message_id: card.payload.message_id });
    // Resolved once: one stored frame (a late answer's response is a copy without seq); b never sees one.
    await c.waitFor((f) => f.type === "message.stop");
    const copies = [...a.of("picker.resolved"), ...c.of("picker.resolved")];
    expect(new Set(copies.filter((f) => f.seq !== undefined).map((f) => f.seq)).size).toBe(1);
    expect(copies.every((f) => f.payload.option_id === winner)).toBe(true);
    expect(b.frames.some((f) => f.type.startsWith("picker."))).toBe(false);
    expect(c.of("notification")).toHaveLength(0);
    const late = await b.request("picker.select", { picker_id: id, option_id: "deny" });
    expect(late.payload).toEqual(first.payload);
  });

  it("asks - an answer that loses while the winner's device name is still looked up gets the same payload, name included", async () => {
    // The winner's device is looked up after the decision; the look-up is held here, as a slow
    // storage or a busy process would hold it, while the losing answer comes in.
    const storage = memoryStorage();
    let release!: () => void;
    let lookedUp!: () => void;
    let holding: Promise<void> | undefined;
    const started = new Promise<void>((resolve) => (lookedUp = resolve));
    const held: Storage = Object.create(storage);
    held.getDevice = async (owner, deviceId) => {
      if (holding) lookedUp();
      await holding;
      return storage.getDevice(owner, deviceId);
    };
    h = await startGateway({ storage: held });
    const a = await connect(h.url, { ...PICKERS, device_id: "pixel", device_name: "Pixel 8" });
    const c = await connect(h.url, { ...PICKERS, device_id: "laptop", device_name: "Laptop" });
    const { card } = await askVia(a, a, "approve: hello");
    const id = card.payload.picker_id;
    holding = new Promise<void>((resolve) => (release = resolve));
    const won = a.request("picker.select", { picker_id: id, option_id: "approve" });
    await started;
    const lost = c.request("picker.select", { picker_id: id, option_id: "deny" });
    // Before, the losing answer was answered at once with the payload as yet unnamed; now it waits.
    await Promise.race([lost, sleep(300)]);
    release();
    expect((await won).payload).toMatchObject({ option_id: "approve", device_id: "pixel", device_name: "Pixel 8" });
    expect((await lost).payload).toEqual((await won).payload);
  });

  it("asks - unknown or foreign ids are not_found; an option not offered, text where not allowed, or neither are unsupported and leave the ask open", async () => {
    h = await startGateway({ authenticator: tokenAuthenticator({ alice: "alice", bob: "bob" }) });
    const a = await connect(h.url, { ...PICKERS, token: "alice" });
    const bob = await connect(h.url, { ...PICKERS, token: "bob" });
    const { echo, card } = await askVia(a, a, "approve: x");
    const id = card.payload.picker_id;
    expect(
      (await a.request("picker.select", { picker_id: "pk0_nope-nope-nope", option_id: "approve" })).payload.code,
    ).toBe("not_found");
    expect((await a.request("picker.select", { picker_id: "garbage", option_id: "approve" })).payload.code).toBe(
      "not_found",
    );
    expect((await bob.request("picker.select", { picker_id: id, option_id: "approve" })).payload.code).toBe(
      "not_found",
    );
    expect((await a.request("picker.select", { picker_id: id, option_id: "maybe" })).payload.code).toBe("unsupported");
    expect((await a.request("picker.select", { picker_id: id, text: "sure" })).payload.code).toBe("unsupported");
    expect((await a.request("picker.select", { picker_id: id })).payload.code).toBe("unsupported");
    expect((await a.request("picker.select", { option_id: "approve" })).payload.code).toBe("unsupported");
    expect(bob.frames.some((f) => f.type.startsWith("picker.") || f.type === "notification")).toBe(false);
    expect((await a.request("picker.select", { picker_id: id, option_id: "deny" })).payload.outcome).toBe("selected");
    expect((await finalOf(a, echo)).payload.final_text).toBe("Denied.");
  });

  it("asks - a question takes an option or free text; text is bounded", async () => {
    h = await startGateway();
    const a = await connect(h.url, PICKERS);
    const { echo, card } = await askVia(a, a, "ask: Which colour?", "picker.confirm");
    expect(card.payload).toMatchObject({
      title: "Which colour?",
      allow_text: true,
      options: [{ id: "yes" }, { id: "no" }],
    });
    expect(
      (await a.request("picker.select", { picker_id: card.payload.picker_id, text: "x".repeat(4001) })).payload.code,
    ).toBe("unsupported");
    expect(
      (await a.request("picker.select", { picker_id: card.payload.picker_id, text: "teal" })).payload,
    ).toMatchObject({ outcome: "selected", text: "teal" });
    expect((await finalOf(a, echo)).payload.final_text).toBe("You answered: teal");
  });

  it("asks - expiry resolves expired (an approval is denied); the idle timeout and wall clock do not run while the person is asked", async () => {
    h = await startGateway({ askExpiresMs: 600, turnTimeoutMs: 150, maxTurnMs: 400 });
    const a = await connect(h.url, PICKERS);
    const { echo, card } = await askVia(a, a, "approve: slow");
    const final = await finalOf(a, echo);
    expect(final.payload).toMatchObject({ final_text: "Denied.", status: "complete" });
    const resolved = a.of("picker.resolved")[0]!;
    expect(resolved.payload).toMatchObject({ picker_id: card.payload.picker_id, outcome: "expired" });
    expect(resolved.payload.device_id).toBeUndefined();
    expect(resolved.seq).toBeLessThan(final.seq!);
    // Typing: on, off while asked, on again when the turn resumed, off at the end.
    const typing = a.of("typing").map((f) => f.payload.on);
    expect(typing).toEqual([true, false, true, false]);
  });

  it("asks - /stop in the lane and deleting the answer resolve the ask as cancelled", async () => {
    h = await startGateway();
    const a = await connect(h.url, PICKERS);
    const first = await askVia(a, a, "approve: one");
    await a.request("message.send", { chat_id: "default", text: "/stop" });
    const stopped = await a.waitFor((f) => f.type === "picker.resolved");
    expect(stopped.payload).toMatchObject({ picker_id: first.card.payload.picker_id, outcome: "cancelled" });
    expect((await finalOf(a, first.echo)).payload.status).toBe("stopped");

    const second = await askVia(a, a, "approve: two");
    const from = a.frames.length;
    await a.request("message.delete", { chat_id: "default", message_ids: [second.card.payload.message_id] });
    const deleted = await a.waitFor((f) => f.type === "picker.resolved", 5000, from);
    expect(deleted.payload).toMatchObject({ picker_id: second.card.payload.picker_id, outcome: "cancelled" });
    // The deleted answer's card is gone from replays; its resolution stays, so a card closes.
    const replay = await connect(h.url, PICKERS);
    await replay.request("sync", { cursor: 0 });
    expect(replay.of("picker.approval").map((f) => f.payload.picker_id)).toEqual([first.card.payload.picker_id]);
    expect(replay.of("picker.resolved")).toHaveLength(2);
  });

  it("asks - a device without pickers answers by slash command; with nothing open the gateway says so", async () => {
    h = await startGateway();
    const a = await connect(h.url);
    const cat = await a.request("commands.catalog");
    for (const name of ["/approve", "/deny", "/answer", "/model"]) {
      expect(cat.payload.commands.find((c: any) => c.name === name)).toMatchObject({ category: "Session" });
    }
    const none = await a.say({ chat_id: "default", text: "/approve" });
    expect(none.final.payload.final_text).toBe("There is no open approval here.");

    const from = a.frames.length;
    const echo = await a.request("message.send", { chat_id: "default", text: "approve: via command" });
    const note = await a.waitFor((f) => f.type === "notification", 5000, from);
    expect(note.payload.picker_id).toMatch(/^pk/);
    await a.request("message.send", { chat_id: "default", text: "/approve" });
    expect((await finalOf(a, echo)).payload.final_text).toBe("You said: via command");

    const asked = await a.request("message.send", { chat_id: "default", text: "ask: Pick" });
    await a.waitFor((f) => f.type === "notification" && f.payload.kind === "clarify");
    const bad = a.frames.length;
    await a.request("message.send", { chat_id: "default", text: "/answer" });
    expect(
      (
        await a.waitFor(
          (f) => f.type === "message.stop" && f.payload.final_text === "Type your answer after /answer.",
          5000,
          bad,
        )
      ).payload.chat_id,
    ).toBe("default");
    await a.request("message.send", { chat_id: "default", text: "/answer No" });
    expect((await finalOf(a, asked)).payload.final_text).toBe("You answered: no");
  });

  it("asks - a device that connects during an ask learns of it by sync, and of its end", async () => {
    h = await startGateway();
    const a = await connect(h.url, PICKERS);
    const { echo, card } = await askVia(a, a, "approve: later");
    const late = await connect(h.url, PICKERS);
    const plain = await connect(h.url);
    await late.request("sync", { cursor: 0 });
    await plain.request("sync", { cursor: 0 });
    expect(late.of("picker.approval")[0]!.payload.picker_id).toBe(card.payload.picker_id);
    expect(late.of("notification")).toHaveLength(0);
    expect(plain.of("picker.approval")).toHaveLength(0);
    expect(plain.of("notification")[0]!.payload.picker_id).toBe(card.payload.picker_id);
    await late.request("picker.select", { picker_id: card.payload.picker_id, option_id: "approve" });
    await finalOf(a, echo);
    const again = await connect(h.url, PICKERS);
    await again.request("sync", { cursor: 0 });
    expect(again.of("picker.resolved")[0]!.payload).toMatchObject({
      outcome: "selected",
      device_id: expect.any(String),
    });
  });

  it("asks - the model picker sets the lane's model for later turns; commands.complete completes commands, picker ids and model ids", async () => {
    h = await startGateway();
    const a = await connect(h.url, PICKERS);
    const complete = (text: string) =>
      a.request("commands.complete", { chat_id: "default", text }).then((f) => f.payload);
    expect((await complete("/mo")).completions.map((c: any) => c.value)).toEqual(["/model"]);
    expect((await complete("/model ")).completions.map((c: any) => c.value)).toEqual([
      "/model demo",
      "/model demo-fast",
    ]);
    expect((await complete("/model demo-")).completions).toEqual([
      { value: "/model demo-fast", description: "Demo (fast)" },
    ]);
    expect(await complete("hello")).toEqual({ text: "hello", completions: [] });
    expect((await a.request("commands.complete", { chat_id: "nope", text: "/m" })).payload.code).toBe("not_found");

    const { echo, card } = await askVia(a, a, "model:", "picker.model");
    expect(card.payload.models).toEqual([
      { id: "demo", label: "Demo", current: true },
      { id: "demo-fast", label: "Demo (fast)" },
    ]);
    expect((await complete("/approve ")).completions).toEqual([]);
    expect(
      (await a.request("picker.select", { picker_id: card.payload.picker_id, option_id: "gpt" })).payload.code,
    ).toBe("unsupported");
    await a.request("picker.select", { picker_id: card.payload.picker_id, option_id: "demo-fast" });
    expect((await finalOf(a, echo)).payload.final_text).toBe("Model: demo-fast");
    const next = await a.say({ chat_id: "default", text: "hi" });
    expect(next.final.payload.runtime.model).toBe("demo-fast");

    const open = await askVia(a, a, "approve: x");
    expect((await complete("/approve ")).completions).toEqual([
      { value: `/approve ${open.card.payload.picker_id}`, description: "Run echo?" },
    ]);
    await a.request("picker.select", { picker_id: open.card.payload.picker_id, option_id: "approve" });
    await finalOf(a, open.echo);
  });

  it("asks - a runtime's completer completes its own commands; an ask it cannot show rejects and the turn says so", async () => {
    const runtime = scriptedRuntime(
      async function* (input) {
        await input.ask({ kind: "confirm", title: "nothing to choose" });
        yield { type: "text", delta: "unreachable" };
      },
      {
        commands: () => [
          { name: "/deploy", description: "Deploy", args_hint: "<env>", category: "Tools & Skills", aliases: [] },
        ],
        complete: async ({ text }) => [{ value: "/deploy prod", description: `for ${text}` }],
      },
    );
    h = await startGateway({ runtime });
    const a = await connect(h.url, PICKERS);
    expect(
      (await a.request("commands.complete", { chat_id: "default", text: "/deploy p" })).payload.completions,
    ).toEqual([{ value: "/deploy prod", description: "for /deploy p" }]);
    const { final } = await a.say({ chat_id: "default", text: "go" });
    expect(final.payload).toMatchObject({ status: "error" });
    expect(final.payload.final_text).toContain("ask: a confirm needs options or allowText");
    await sleep(10);
  });
});
