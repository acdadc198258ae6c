// An answer stored before its tool calls were bounded (docs/PROTOCOL.md §14.1) can be larger than
// max_frame_bytes. Whatever brings it to a device, a sync replay or the live end of a crashed
// turn, it arrives within max_frame_bytes, its tool calls cut as a history item's are (§5).
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, memoryLaneLock, type StoredMessage, type ToolCall } from "chat-gateway";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";
import { answerWithTools, unboundedTools } from "../fixtures/unbounded-tools.js";
import { Client, startGateway, type Frame, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await removeTempDirs();
});

/** 100 calls of 10 KB of arguments and 10 KB of output: about 2 MB, twice the default max_frame_bytes. */
const tools = unboundedTools(100, 10_000, 5_000);
const answer: StoredMessage = { ...answerWithTools("m-old", "the answer", tools), model: "old-model" };

/** The message.stop an older gateway stored for `answer`, tools whole. */
const oldStop = {
  type: "message.stop",
  payload: {
    message_id: answer.message_id,
    final_text: answer.text,
    reasoning: "",
    ts: answer.ts,
    media: [],
    status: "complete",
    model: "old-model",
    runtime: { model: "old-model" },
    chat_id: "default",
    thread_id: null,
    tools,
  },
};

function frameBytes(frame: Frame): number {
  return Buffer.byteLength(JSON.stringify(frame), "utf8");
}

/** The device's max_frame_bytes, from its hello.ok. */
function maxFrameBytes(c: Client): number {
  return c.frames[0]!.payload.limits.max_frame_bytes;
}

/**
 * A frame within the device's limit that keeps every call in order, cut as a history item is:
 * outputs first, so the arguments come whole, the first outputs whole and the later ones cut (to
 * "" at the end), each cut entry marked `truncated`.
 */
function expectCutToFit(c: Client, frame: Frame): void {
  expect(frameBytes(frame)).toBeLessThanOrEqual(maxFrameBytes(c));
  const kept = frame.payload.tools as ToolCall[];
  expect(kept.map((t) => t.name)).toEqual(tools.map((t) => t.name));
  expect(kept.every((t) => JSON.stringify(t.args) === JSON.stringify(tools[0]!.args))).toBe(true);
  const output = tools[0]!.output as string;
  const whole = kept.filter((t) => t.output === output).length;
  expect(whole).toBeGreaterThan(0);
  expect(whole).toBeLessThan(kept.length);
  expect(kept.slice(0, whole).every((t) => t.truncated === undefined)).toBe(true);
  expect(kept.slice(whole).every((t) => t.truncated === true && output.startsWith(t.output as string))).toBe(true);
  expect(kept.at(-1)!.output).toBe("");
}

describe("oversized stored answers", () => {
  it("sync - a stored message.stop over max_frame_bytes is replayed cut to fit, its tools marked truncated, to streaming and plain devices", async () => {
    const dir = await tempDir();
    const old = sqlJsStorage({ dir });
    await old.open?.();
    // Through the storage contract, as a gateway from before the 256 KiB bound wrote it.
    await old.commit(ANONYMOUS_OWNER, { messages: [answer], outbox: [oldStop] });
    await old.close?.();
    h = await startGateway({ storage: sqlJsStorage({ dir }) });

    const streaming = await Client.connect(h.url);
    await streaming.request("sync", { cursor: 0 });
    const stop = streaming.of("message.stop")[0]!;
    expect(stop.payload).toMatchObject({ message_id: "m-old", final_text: "the answer", status: "complete" });
    expectCutToFit(streaming, stop);

    const plain = await Client.connect(h.url, { caps: { streaming: false } });
    await plain.request("sync", { cursor: 0 });
    const message = plain.of("message").find((f) => f.payload.message_id === "m-old")!;
    expect(message.payload).toMatchObject({ role: "assistant", text: "the answer" });
    expectCutToFit(plain, message);
    // Nothing closed either device: both go on after the replay.
    expect((await streaming.request("ping", { ts: 1 })).type).toBe("pong");
    expect((await plain.request("ping", { ts: 1 })).type).toBe("pong");
  });

  it("recovery - a crashed turn whose stored tools pass max_frame_bytes ends live to a connected device cut to fit", async () => {
    const storage = sqlJsStorage({ dir: await tempDir() });
    h = await startGateway({ storage, laneLock: memoryLaneLock(), recoveryIntervalMs: 100 });
    const c = await Client.connect(h.url);
    // What an older process killed mid-turn leaves behind: a streaming answer with its tools whole.
    await storage.commit(ANONYMOUS_OWNER, { messages: [{ ...answer, status: "streaming" }] });
    const stop = await c.waitFor((f) => f.type === "message.stop", 5000);
    expect(stop.payload).toMatchObject({ message_id: "m-old", status: "interrupted", final_text: "the answer" });
    expectCutToFit(c, stop);
  });
});
