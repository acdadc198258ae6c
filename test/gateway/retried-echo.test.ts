// A retried message.send returns the stored echo as it was, with its seq (docs/PROTOCOL.md §4.1):
// at once, while another device's sends land in between, and after a restart.
import { afterEach, describe, expect, it } from "vitest";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client, startGateway, type Harness } from "./harness.js";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  await removeTempDirs();
});

describe("retried sends", () => {
  it("echo - a retry gets the stored echo with its seq, also after other sends and after a restart", async () => {
    const dir = await tempDir();
    harness = await startGateway({ storage: sqlJsStorage({ dir }) });
    const a = await Client.connect(harness.url);
    const b = await Client.connect(harness.url);
    const first = await a.request("message.send", { chat_id: "default", text: "hello", client_msg_id: "k-1" });
    expect(typeof first.seq).toBe("number");
    for (let i = 0; i < 5; i++) await b.request("message.send", { chat_id: "default", text: `other ${i}` });
    const retry = await a.request("message.send", { chat_id: "default", text: "hello", client_msg_id: "k-1" });
    expect(retry.seq).toBe(first.seq);
    expect(retry.payload).toEqual(first.payload);
    await harness.close();
    harness = await startGateway({ storage: sqlJsStorage({ dir }) });
    const again = await Client.connect(harness.url);
    const late = await again.request("message.send", { chat_id: "default", text: "hello", client_msg_id: "k-1" });
    expect(late.seq).toBe(first.seq);
    expect(late.payload).toEqual(first.payload);
  });
});
