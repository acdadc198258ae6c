// A server restart in the middle of a streamed answer: the client reconnects to the new server on
// the same port and data dir, syncs, ends with the interrupted message.stop, and sees no stored
// frame twice.
import { afterEach, expect, it } from "vitest";
import type { ServerFrame } from "chat-gateway/protocol";
import type { RunningServer } from "../../examples/server/server.js";
import { recordingClient, startExample, tempDir, until, wsUrl } from "./helpers.js";

let servers: RunningServer[] = [];
let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  for (const s of servers) await s.close();
  servers = [];
  await cleanup?.();
});

it("client - survives a server restart mid-turn: reconnects, syncs, gets the interrupted stop once", async () => {
  const temp = await tempDir();
  cleanup = temp.cleanup;
  const first = await startExample(temp.dir);
  servers.push(first);
  const { client, frames } = recordingClient({ url: wsUrl(first), deviceId: "restart-dev" });
  const states: string[] = [];
  client.on("state", (s) => states.push(s));
  let syncs = 0;
  client.on("synced", () => syncs++);
  try {
    await client.connect();
    await client.ready();
    const warmup = await client.sendMessage({ chat_id: "default", text: "warm up" });
    await until(
      () =>
        frames.find(
          (f) => f.type === "message.stop" && (f.payload as { reply_to?: string }).reply_to === warmup.message_id,
        ),
      "warm-up answer",
    );

    // About 60 pieces 15 ms apart: long enough to stop the server in the middle.
    const long = `long ${"word ".repeat(120)}`;
    const from = frames.length;
    const echo = await client.sendMessage({ chat_id: "default", text: long });
    const update = await until(
      () => frames.slice(from).find((f) => f.type === "message.update"),
      "the first streamed piece",
    );
    const answerId = (update.payload as { message_id: string }).message_id;
    await first.close();
    servers = [];

    const second = await startExample(temp.dir, first.port);
    servers.push(second);
    await until(() => states.includes("reconnecting"), "reconnecting");
    const stop = await until(
      () =>
        frames.find(
          (f): f is ServerFrame<"message.stop"> =>
            f.type === "message.stop" && (f.payload as { message_id: string }).message_id === answerId,
        ),
      "the interrupted message.stop",
      10_000,
    );
    await until(() => client.state === "open", "open again", 10_000);
    expect(stop.payload.status).toBe("interrupted");
    expect(stop.payload.reply_to).toBe(echo.message_id);
    expect(stop.payload.final_text.length).toBeLessThan(`You said: ${long}`.length);

    // The conversation goes on against the new server.
    const after = await client.sendMessage({ chat_id: "default", text: "after restart" });
    await until(
      () =>
        frames.find(
          (f) => f.type === "message.stop" && (f.payload as { reply_to?: string }).reply_to === after.message_id,
        ),
      "answer after restart",
    );

    const stored = frames.filter((f) => f.seq !== undefined);
    const seqs = stored.map((f) => f.seq!);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(
      frames.filter((f) => f.type === "message.stop" && (f.payload as { message_id: string }).message_id === answerId),
    ).toHaveLength(1);
    expect(
      frames.filter(
        (f) => f.type === "message" && (f.payload as { message_id: string }).message_id === echo.message_id,
      ),
    ).toHaveLength(1);
    expect(client.cursor).toBe(seqs.at(-1));
    expect(states).toEqual(expect.arrayContaining(["connecting", "syncing", "open", "reconnecting"]));
    expect(syncs).toBe(2);

    const history = await client.request("history", { chat_id: "default" });
    expect(history.messages.map((m) => m.text)).toEqual([
      "warm up",
      "You said: warm up",
      long,
      stop.payload.final_text,
      "after restart",
      "You said: after restart",
    ]);
  } finally {
    client.close();
  }
});
