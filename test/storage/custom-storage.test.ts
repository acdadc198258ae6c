// The storage that docs/CUSTOM-STORAGE.md walks through: it passes the kit through the core's
// fallbacks, and a gateway on it serves retries, search and a restart over the wire.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeStorageConformance } from "chat-gateway/testing";
import { jsonFileStorage } from "../../examples/custom-storage/json-file-storage.js";
import { Client, startGateway } from "../gateway/harness.js";

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), "cg-json-"));
  dirs.push(dir);
  return dir;
};

describeStorageConformance(
  "JSON files (examples/custom-storage)",
  async () => {
    const dir = await tempDir();
    return { storage: jsonFileStorage({ dir }), reopen: () => jsonFileStorage({ dir }) };
  },
  { persists: true },
);

describe("a gateway on the JSON file storage", () => {
  it("core-only storage - a retried send, search and history work through the fallbacks and survive a restart", async () => {
    const dir = await tempDir();
    const first = await startGateway({ storage: jsonFileStorage({ dir }), mediaStore: undefined });
    const c = await Client.connect(first.url);
    const { echo, final } = await c.say({ chat_id: "default", text: "remember the lighthouse", client_msg_id: "k1" });
    const retry = await c.request("message.send", {
      chat_id: "default",
      text: "remember the lighthouse",
      client_msg_id: "k1",
    });
    expect(retry.payload.message_id).toBe(echo.payload.message_id);
    const hits = await c.request("search", { query: "lighthouse", scope: "all" });
    expect((hits.payload.hits as Array<{ message_id: string }>).map((h) => h.message_id)).toEqual([
      final.payload.message_id,
      echo.payload.message_id,
    ]);
    await c.close();
    await first.close();

    const second = await startGateway({ storage: jsonFileStorage({ dir }), mediaStore: undefined });
    const d = await Client.connect(second.url);
    const history = await d.request("history", { chat_id: "default" });
    expect((history.payload.messages as Array<{ text: string }>).map((m) => m.text)).toEqual([
      "remember the lighthouse",
      "You said: remember the lighthouse",
    ]);
    await d.close();
    await second.close();
  });
});
