// Frame validation as data: each fixture is a frame plus the expected result (PROTOCOL.md §1, §8).
// An accepting fixture states `expect.ok` (the type), `expect.payload` (the payload a handler gets) and
// `expect.id` when the frame carries one; a refusing one states `expect.code` and optionally `field`/`message`.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FrameError, parseClientFrame } from "chat-gateway/protocol";

const dir = join(import.meta.dirname, "fixtures/frames");
const fixtures = readdirSync(dir).filter((f) => f.endsWith(".json"));

describe("frames - validation fixtures", () => {
  it.each(fixtures)("%s", (file) => {
    const { frame, expect: want } = JSON.parse(readFileSync(join(dir, file), "utf8"));
    const text = JSON.stringify(frame);
    if (want.ok) {
      // Every accepting fixture must state the payload; strict, so a dropped or added field fails too.
      expect(want, "fixture states expect.payload").toHaveProperty("payload");
      expect(parseClientFrame(text)).toStrictEqual({ type: want.ok, id: want.id, payload: want.payload });
      return;
    }
    let error: unknown;
    try {
      parseClientFrame(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FrameError);
    expect((error as FrameError).code).toBe(want.code);
    if (want.field) expect((error as FrameError).message).toContain(`"${want.field}"`);
    if (want.message) expect((error as FrameError).message).toContain(want.message);
    if (typeof frame.id === "string") expect((error as FrameError).requestId).toBe(frame.id);
  });

  it("frames - malformed JSON is unsupported", () => {
    expect(() => parseClientFrame(readFileSync(join(dir, "_not-json.txt"), "utf8"))).toThrow(/malformed JSON/);
  });
});
