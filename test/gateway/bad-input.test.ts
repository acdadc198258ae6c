// Bad input over a real socket: each case of test/fixtures/bad-frames.ts gets its clear error code,
// with the request's id, never `internal`, and the connection goes on (docs/PROTOCOL.md "Errors").
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { badFrameCases } from "../fixtures/bad-frames.js";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness;
let c: Client;
const logged: unknown[] = [];

beforeAll(async () => {
  h = await startGateway({
    rateLimit: { perSecond: 10_000, burst: 10_000 },
    logger: { info() {}, warn() {}, error: (...args: unknown[]) => void logged.push(args) },
  });
  c = await Client.connect(h.url);
});
afterAll(async () => {
  await c?.close();
  await h?.close();
});

let next = 0;

describe("bad input", () => {
  it.each(badFrameCases().map((k) => [k.name, k] as const))("bad input - %s", async (_name, k) => {
    const id = `b${++next}`;
    const from = c.frames.length;
    c.raw(k.id === false ? k.frame : `{"id":${JSON.stringify(id)},${k.frame.slice(1)}`);
    const answer =
      k.id === false
        ? await c.waitFor((f) => f.type === "error", 5000, from)
        : await c.waitFor((f) => f.id === id, 5000, from);
    if (k.id === false) expect(answer.id).toBeUndefined();
    if ("type" in k.expect) {
      expect(answer.type, JSON.stringify(answer.payload)).toBe(k.expect.type);
    } else {
      expect(answer.type).toBe("error");
      expect(answer.payload.code, answer.payload.message).toBe(k.expect.code);
      if (k.expect.message) expect(answer.payload.message).toContain(k.expect.message);
      expect(answer.payload.message.length).toBeLessThan(1000);
    }
    expect((await c.request("ping", { ts: 5 })).type).toBe("pong");
    expect(logged).toEqual([]);
  });
});
