// `hello`, `sync` and `ping` are taken without the payload structs when plainly valid
// (src/protocol/hot-frames.ts); at the edges they must come out exactly as the structs make them:
// the same payload for what is valid, the same refusal, naming the same field, for what is not.
import { describe, expect, it } from "vitest";
import { type Struct, validate } from "superstruct";
import { clientFrameStructs, FrameError, parseClientFrame } from "chat-gateway/protocol";

const parse = (frame: unknown) => parseClientFrame(JSON.stringify(frame));

function refusal(frame: unknown): string {
  try {
    parse(frame);
  } catch (error) {
    expect(error).toBeInstanceOf(FrameError);
    return (error as FrameError).message;
  }
  throw new Error(`accepted: ${JSON.stringify(frame)}`);
}

const hello = { token: "t", device_id: "d" };

describe("frames - hello, sync and ping", () => {
  it("frames - plainly valid ones keep their payload as sent, unknown fields included; a null id or payload is none", () => {
    const full = {
      ...hello,
      device_name: "n",
      caps: { min_protocol: 1, media: false, push: "ntfy", streaming: true, pickers: true, delta: false, x: 1 },
      fcm_token: "f",
      ntfy_topic: "n",
      webpush: null,
      extra: [1],
    };
    expect(parse({ type: "hello", id: "h", payload: full })).toStrictEqual({ type: "hello", id: "h", payload: full });
    expect(parse({ type: "sync", id: null, payload: { cursor: 0 } })).toStrictEqual({
      type: "sync",
      id: undefined,
      payload: { cursor: 0 },
    });
    expect(parse({ type: "ping" })).toStrictEqual({ type: "ping", id: undefined, payload: {} });
    expect(parse({ type: "ping", id: "p", payload: null })).toStrictEqual({ type: "ping", id: "p", payload: {} });
    expect(parse({ type: "ping", payload: { ts: 5 } })).toStrictEqual({
      type: "ping",
      id: undefined,
      payload: { ts: 5 },
    });
  });

  it("frames - an array where an object belongs is refused as the structs refuse it", () => {
    expect(refusal({ type: "hello", payload: { ...hello, caps: [] } })).toContain('"caps"');
    expect(refusal({ type: "ping", payload: [] })).toMatch(/^invalid (frame|ping)/);
  });

  it("frames - anything else is refused by the structs, naming the field", () => {
    expect(refusal({ type: "hello", payload: { device_id: "d" } })).toContain('"token"');
    expect(refusal({ type: "hello", payload: { ...hello, device_name: null } })).toContain('"device_name"');
    expect(refusal({ type: "hello", payload: { ...hello, caps: { min_protocol: 1.5 } } })).toContain(
      '"caps.min_protocol"',
    );
    expect(refusal({ type: "hello", payload: { ...hello, caps: { delta: "yes" } } })).toContain('"caps.delta"');
    expect(refusal({ type: "hello", payload: { ...hello, caps: "all" } })).toContain('"caps"');
    expect(refusal({ type: "hello", payload: { ...hello, fcm_token: 7 } })).toContain('"fcm_token"');
    expect(refusal({ type: "sync", payload: { cursor: 1.5 } })).toContain('"cursor"');
    expect(refusal({ type: "sync", payload: {} })).toContain('"cursor"');
    expect(refusal({ type: "ping", payload: { ts: "now" } })).toContain('"ts"');
    expect(refusal({ type: "ping", id: 5 })).toContain("invalid frame");
    expect(refusal({ type: "ping", payload: "x" })).toContain("invalid frame");
  });
});

// The structs stay the definition: whatever the fast path takes, they must take as it stands, and
// whatever they refuse must be refused. Frames built from every mix of a few values per field.
describe("frames - the fast path against the structs", () => {
  const values = [undefined, null, "s", "", 0, 1, -3, 1.5, true, [], {}, { min_protocol: 1, push: "ntfy" }];
  const pick = (i: number, salt: number) => values[(i * 7 + salt * 13) % values.length];
  const fields: Record<string, string[]> = {
    hello: ["token", "device_id", "device_name", "caps", "fcm_token", "ntfy_topic", "webpush"],
    sync: ["cursor"],
    ping: ["ts"],
  };

  for (const [type, names] of Object.entries(fields)) {
    it(`frames - ${type}: accepted exactly when its struct accepts it, with the struct's payload`, () => {
      const struct: Struct<any, any> = clientFrameStructs[type as keyof typeof clientFrameStructs];
      for (let i = 0; i < 600; i++) {
        const payload: Record<string, unknown> = {};
        names.forEach((name, salt) => {
          const value = pick(i + salt * i, salt);
          if (value !== undefined) payload[name] = value;
        });
        if (type === "hello" && i % 3 === 0) Object.assign(payload, hello);
        const [failure, valid] = validate(payload, struct);
        let parsed: unknown;
        try {
          parsed = parse({ type, id: "x", payload }).payload;
        } catch {
          parsed = undefined;
        }
        expect(parsed === undefined, JSON.stringify(payload)).toBe(failure !== undefined);
        if (parsed !== undefined) expect(parsed).toStrictEqual(valid);
      }
    });
  }
});
