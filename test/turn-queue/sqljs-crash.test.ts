// The durable turn queue through the wire on the default setup (the example server on sql.js): a
// device sends a long message and three more into the same lane, the server is killed with SIGKILL
// mid-answer and started again. The running answer ends interrupted; the three waiting messages are
// answered after it, in order, exactly once each (docs/PROTOCOL.md §4.2).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client, type Frame } from "../gateway/harness.js";
import { startServerProcess, type ServerProcess } from "../example-server-process.js";

let servers: ServerProcess[] = [];
afterEach(() => {
  for (const s of servers) s.child.kill("SIGKILL");
  servers = [];
});

async function start(dataDir: string, delayMs: number): Promise<ServerProcess> {
  const server = await startServerProcess({ GATEWAY_DATA_DIR: dataDir, GATEWAY_DEMO_DELAY_MS: String(delayMs) });
  servers.push(server);
  return server;
}

function killed(server: ServerProcess): Promise<void> {
  return new Promise((resolve) => {
    server.child.once("exit", () => resolve());
    server.child.kill("SIGKILL");
  });
}

/** The lane's history, oldest first. */
async function history(client: Client): Promise<Array<Record<string, any>>> {
  const page = await client.request("history", { chat_id: "default", limit: 200 });
  return page.payload.messages as Array<Record<string, any>>;
}

/** Waits until every user message of the lane has one answer that is no longer streaming. */
async function settled(client: Client, users: number): Promise<Array<Record<string, any>>> {
  for (let i = 0; i < 200; i++) {
    const messages = await history(client);
    const answers = messages.filter((m) => m.role === "assistant" && m.status !== "streaming");
    if (answers.length >= users && !messages.some((m) => m.status === "streaming")) return messages;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the lane never settled: ${JSON.stringify(await history(client))}`);
}

describe("turn queue - sql.js", () => {
  it("turn queue - after kill -9 mid-answer, the running answer ends interrupted and the three waiting messages are answered once each, in order", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-queue-"));
    const first = await start(dataDir, 200);
    const device = await Client.connect(first.ws);
    const long = Array.from({ length: 80 }, (_, i) => `word${i}`).join(" ");
    const echoes: Frame[] = [];
    echoes.push(await device.request("message.send", { chat_id: "default", text: long, client_msg_id: "k0" }));
    for (let i = 1; i <= 3; i++)
      echoes.push(
        await device.request("message.send", { chat_id: "default", text: `waiting ${i}`, client_msg_id: `k${i}` }),
      );
    expect(echoes.map((e) => e.type)).toEqual(["message", "message", "message", "message"]);
    // The first answer is streaming (its crash marker is stored before message.start).
    await device.waitFor((f) => f.type === "message.update", 10_000);
    await killed(first);

    const second = await start(dataDir, 0);
    const again = await Client.connect(second.ws);
    const messages = await settled(again, 4);
    const ids = echoes.map((e) => e.payload.message_id as string);
    const answers = messages.filter((m) => m.role === "assistant");
    // One answer per message, no more.
    expect(answers.map((a) => a.reply_to)).toEqual(ids);
    expect(answers[0].status).toBe("interrupted");
    expect(answers.slice(1).map((a) => [a.status, a.text])).toEqual([
      ["complete", "You said: waiting 1"],
      ["complete", "You said: waiting 2"],
      ["complete", "You said: waiting 3"],
    ]);
    // In lane order: each answer comes after the one before it.
    const position = (id: string) => messages.findIndex((m) => m.message_id === id);
    for (let i = 1; i < answers.length; i++)
      expect(position(answers[i].message_id)).toBeGreaterThan(position(answers[i - 1].message_id));

    // A second restart answers nothing again.
    await killed(second);
    const third = await start(dataDir, 0);
    const last = await Client.connect(third.ws);
    await new Promise((r) => setTimeout(r, 500));
    expect((await history(last)).filter((m) => m.role === "assistant")).toHaveLength(4);
  }, 60_000);

  it("turn queue - a message deleted while it waits is never answered, also across a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-queue-"));
    const first = await start(dataDir, 200);
    const device = await Client.connect(first.ws);
    await device.request("message.send", {
      chat_id: "default",
      text: Array.from({ length: 40 }, (_, i) => `w${i}`).join(" "),
    });
    const doomed = await device.request("message.send", { chat_id: "default", text: "never answer me" });
    const kept = await device.request("message.send", { chat_id: "default", text: "answer me" });
    const deleted = await device.request("message.delete", {
      chat_id: "default",
      message_ids: [doomed.payload.message_id],
    });
    expect(deleted.type).toBe("message.deleted");
    await device.waitFor((f) => f.type === "message.update", 10_000);
    await killed(first);

    const second = await start(dataDir, 0);
    const again = await Client.connect(second.ws);
    const messages = await settled(again, 2);
    const answers = messages.filter((m) => m.role === "assistant");
    expect(answers.map((a) => a.reply_to)).not.toContain(doomed.payload.message_id);
    expect(answers.at(-1)).toEqual(
      expect.objectContaining({ reply_to: kept.payload.message_id, text: "You said: answer me", status: "complete" }),
    );
    expect(answers).toHaveLength(2);
  }, 60_000);
});
