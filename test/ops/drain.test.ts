// Draining on SIGTERM (docs/PROTOCOL.md §18), through the wire on the example server (sql.js): the
// running turn finishes within --drain-ms, a send during the drain is refused rate_limited, the
// waiting messages stay queued for the next start, sockets close 1012 and the process exits 0.
// Past --drain-ms the running turn ends interrupted instead.
import { mkdtempSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "../gateway/harness.js";
import { startServerProcess, type ServerProcess } from "../example-server-process.js";

let servers: ServerProcess[] = [];
afterEach(() => {
  for (const s of servers) s.child.kill("SIGKILL");
  servers = [];
});

async function start(dataDir: string, env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess({ GATEWAY_DATA_DIR: dataDir, ...env });
  servers.push(server);
  return server;
}

function exited(server: ServerProcess): Promise<number | null> {
  return new Promise((resolve) => server.child.once("exit", (code) => resolve(code)));
}

/** The lane's messages, oldest first, once every user message has an answer that is no longer streaming. */
async function settled(client: Client, users: number): Promise<Array<Record<string, any>>> {
  for (let i = 0; i < 200; i++) {
    const page = await client.request("history", { chat_id: "default", limit: 200 });
    const messages = page.payload.messages as Array<Record<string, any>>;
    const answers = messages.filter((m) => m.role === "assistant" && m.status !== "streaming");
    if (answers.length >= users && !messages.some((m) => m.status === "streaming")) return messages;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the lane never settled");
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");

describe("draining on SIGTERM", () => {
  it("lets the running turn finish, refuses new sends, keeps waiting messages queued, closes 1012 and exits 0", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-drain-"));
    const first = await start(dataDir, { GATEWAY_DRAIN_MS: "20000", GATEWAY_DEMO_DELAY_MS: "100" });
    const device = await Client.connect(first.ws);
    const running = await device.request("message.send", { chat_id: "default", text: words(30), client_msg_id: "k0" });
    const waiting = [];
    for (let i = 1; i <= 2; i++)
      waiting.push(
        await device.request("message.send", { chat_id: "default", text: `waiting ${i}`, client_msg_id: `k${i}` }),
      );
    await device.waitFor((f) => f.type === "message.update", 10_000);
    const exit = exited(first);
    first.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    const late = await device.request("message.send", { chat_id: "default", text: "too late", client_msg_id: "k9" });
    expect([late.type, late.payload.code]).toEqual(["error", "rate_limited"]);

    expect(await device.closedPromise).toBe(1012);
    expect(await exit).toBe(0);
    // The running answer was stored complete before the socket closed.
    const final = device.frames.find(
      (f) => f.type === "message.stop" && f.payload.reply_to === running.payload.message_id,
    );
    expect([final?.payload.status, final?.payload.final_text]).toEqual(["complete", `You said: ${words(30)}`]);

    const second = await start(dataDir, { GATEWAY_DEMO_DELAY_MS: "0" });
    const again = await Client.connect(second.ws);
    const messages = await settled(again, 3);
    const answers = messages.filter((m) => m.role === "assistant");
    expect(answers.map((a) => [a.reply_to, a.status])).toEqual([
      [running.payload.message_id, "complete"],
      [waiting[0]!.payload.message_id, "complete"],
      [waiting[1]!.payload.message_id, "complete"],
    ]);
    expect(messages.some((m) => m.text === "too late")).toBe(false);
    await again.close();
  }, 60_000);

  it("ends a turn still running after --drain-ms as interrupted, then closes 1012 and exits 0", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-drain-"));
    const server = await start(dataDir, { GATEWAY_DRAIN_MS: "300", GATEWAY_DEMO_DELAY_MS: "200" });
    const device = await Client.connect(server.ws);
    const running = await device.request("message.send", { chat_id: "default", text: words(200), client_msg_id: "k0" });
    await device.waitFor((f) => f.type === "message.update", 10_000);
    const exit = exited(server);
    server.child.kill("SIGTERM");
    expect(await device.closedPromise).toBe(1012);
    expect(await exit).toBe(0);
    const stop = device.frames.find(
      (f) => f.type === "message.stop" && f.payload.reply_to === running.payload.message_id,
    );
    expect(stop?.payload.status ?? "no message.stop").toBe("interrupted");
  }, 60_000);

  it("destroys a socket whose client stopped reading once --drain-ms and a short grace are over, and exits 0 on time", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-drain-"));
    const server = await start(dataDir, { GATEWAY_DRAIN_MS: "500" });
    const stuck = await Client.connect(server.ws);
    const reading = await Client.connect(server.ws);
    // The stuck client's end stops reading: the server's close frame is never read, nor answered.
    (stuck.ws as unknown as { _socket: Socket })._socket.pause();
    const exit = exited(server);
    server.child.kill("SIGTERM");
    // Without a bound, the close handshake waits 30 s for the stuck client; 20 s is far past
    // --drain-ms and the grace, with room for a loaded machine.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"still running">(
      (resolve) => (timer = setTimeout(() => resolve("still running"), 20_000)),
    );
    const code = await Promise.race([exit, late]);
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(await reading.closedPromise).toBe(1012);
    // The process was gone before the stuck client ever saw its close.
    expect(stuck.closeCode).toBeUndefined();
    (stuck.ws as unknown as { _socket: Socket })._socket.resume();
    await stuck.closedPromise;
  }, 60_000);
});
