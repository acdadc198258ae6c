// The client's browser-safe media helpers agree with the gateway's Node versions.
import { createHash, randomBytes } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { decodeChunk, encodeChunk } from "chat-gateway/protocol";
import { decodeMediaChunk, encodeMediaChunk, sha256Hex } from "chat-gateway/client";

describe("client media helpers", () => {
  it("encode chunks byte for byte like the gateway, and decode the gateway's chunks", () => {
    const bytes = randomBytes(1000);
    const mine = encodeMediaChunk("u-ref ✓", 262144, bytes);
    expect(Buffer.from(mine).equals(Buffer.from(encodeChunk("u-ref ✓", 262144, bytes)))).toBe(true);
    expect(decodeChunk(mine)).toMatchObject({ media: "u-ref ✓", offset: 262144 });
    const theirs = decodeMediaChunk(encodeChunk("md-1", 0, bytes));
    expect(theirs?.media).toBe("md-1");
    expect(Buffer.from(theirs!.bytes).equals(bytes)).toBe(true);
  });

  it("decode refuses what is not a chunk", () => {
    expect(decodeMediaChunk(new Uint8Array([0, 0]))).toBeUndefined();
    expect(decodeMediaChunk(new Uint8Array([0, 0, 0, 99, 1, 2]))).toBeUndefined();
    expect(decodeMediaChunk(new Uint8Array([0, 0, 0, 2, 0x7b, 0x7d]))).toBeUndefined();
  });

  afterEach(() => vi.unstubAllGlobals());

  it.each(["WebCrypto", "no crypto.subtle (a page over plain http)"])(
    "sha256 with %s matches node:crypto at every padding boundary",
    async (where) => {
      // An insecure context has crypto.getRandomValues but no crypto.subtle.
      if (where !== "WebCrypto") vi.stubGlobal("crypto", { getRandomValues: globalThis.crypto.getRandomValues });
      for (const size of [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 70_000]) {
        const data = randomBytes(size);
        expect(await sha256Hex(data)).toBe(createHash("sha256").update(data).digest("hex"));
      }
    },
  );
});
