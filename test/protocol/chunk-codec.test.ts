// The binary media chunk of docs/PROTOCOL.md §7, shared by the gateway, the client and the web UI.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeChunk, encodeChunk, GatewayError } from "chat-gateway/protocol";

describe("protocol - media chunk codec", () => {
  it("decodes what it encodes, also from a view into a larger buffer", () => {
    fc.assert(
      fc.property(fc.string(), fc.nat(), fc.uint8Array({ maxLength: 2048 }), (media, offset, bytes) => {
        const encoded = encodeChunk(media, offset, bytes);
        const padded = new Uint8Array(encoded.byteLength + 7);
        padded.set(encoded, 3);
        const chunk = decodeChunk(padded.subarray(3, 3 + encoded.byteLength));
        expect(chunk.media).toBe(media);
        expect(chunk.offset).toBe(offset);
        expect([...chunk.bytes]).toEqual([...bytes]);
      }),
    );
  });

  it("lays out a big-endian header length, the JSON header, then the bytes", () => {
    const out = encodeChunk("m", 2, new Uint8Array([9, 8]));
    const header = new TextEncoder().encode(JSON.stringify({ media: "m", offset: 2 }));
    expect([...out.subarray(0, 4)]).toEqual([0, 0, 0, header.byteLength]);
    expect(new TextDecoder().decode(out.subarray(4, 4 + header.byteLength))).toBe('{"media":"m","offset":2}');
    expect([...out.subarray(4 + header.byteLength)]).toEqual([9, 8]);
  });

  it.each([
    ["too short", new Uint8Array([0, 0]), /too short/],
    ["a header longer than the message", new Uint8Array([0, 0, 0, 9, 1]), /exceeds the frame/],
    ["a header that is not JSON", new Uint8Array([0, 0, 0, 1, 0x7b]), /not JSON/],
    ["a negative offset", withHeader('{"media":"m","offset":-1}'), /"offset"/],
    ["a fractional offset", withHeader('{"media":"m","offset":1.5}'), /"offset"/],
    ["no media", withHeader('{"offset":0}'), /"media"/],
    ["a null header", withHeader("null"), /"media"/],
  ])("refuses %s as unsupported", (_name, data, message) => {
    let error: unknown;
    try {
      decodeChunk(data);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe("unsupported");
    expect((error as GatewayError).message).toMatch(message);
  });
});

function withHeader(json: string): Uint8Array {
  const header = new TextEncoder().encode(json);
  const out = new Uint8Array(4 + header.byteLength);
  new DataView(out.buffer).setUint32(0, header.byteLength);
  out.set(header, 4);
  return out;
}
