// Gateway → client frames as data: each fixture is a frame plus `expect.ok` or the `expect.problem`
// serverFrameProblem names (docs/PROTOCOL.md §1.2). parseServerFrame is the client's lenient reading.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  GatewayError,
  parseServerFrame,
  serverFrameProblem,
  SERVER_FRAME_TYPES,
  serverFrameStructs,
} from "chat-gateway/protocol";

const dir = join(import.meta.dirname, "../fixtures/server-frames");
const fixtures = readdirSync(dir).filter((f) => f.endsWith(".json"));

function fixture(name: string): { frame: Record<string, unknown>; expect: { ok?: true; problem?: string } } {
  return JSON.parse(readFileSync(join(dir, name), "utf8"));
}

describe("protocol - gateway frames", () => {
  it.each(fixtures)("%s", (file) => {
    const { frame, expect: want } = fixture(file);
    const problem = serverFrameProblem(frame);
    if (want.ok) expect(problem).toBeUndefined();
    else expect(problem).toContain(want.problem);
  });

  it("has a struct for every frame type the gateway sends", () => {
    expect(Object.keys(serverFrameStructs).sort()).toEqual([...SERVER_FRAME_TYPES].sort());
  });

  it("a client reading drops fields a newer gateway adds and ignores frame types it does not know", () => {
    const { frame } = fixture("message-user-echo.json");
    const newer = { ...frame, payload: { ...(frame.payload as object), mood: "happy" } };
    const parsed = parseServerFrame(JSON.stringify(newer));
    expect(parsed).toEqual(frame);
    expect(parsed?.payload).not.toHaveProperty("mood");
    expect(parseServerFrame(JSON.stringify({ type: "picker.open", payload: {} }))).toBeUndefined();
  });

  it("a client reading refuses a frame of a known type with a wrong field, naming it", () => {
    const { frame } = fixture("history-without-has-more.json");
    expect(() => parseServerFrame(JSON.stringify(frame))).toThrow(GatewayError);
    expect(() => parseServerFrame(JSON.stringify(frame))).toThrow(/payload\.has_more/);
    expect(() => parseServerFrame("{")).toThrow(/not JSON/);
  });
});
