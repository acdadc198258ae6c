// The app icons of the manifest (192 and 512 px PNG), drawn from the shapes of icon.svg at build
// time: a white speech bubble on the blue square. Full-bleed, with the bubble inside the middle
// 60%, so a launcher may cut it to any mask shape.
import { deflateSync } from "node:zlib";

const BLUE = [0x2f, 0x5f, 0xb3, 0xff];
const WHITE = [0xff, 0xff, 0xff, 0xff];

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "ascii");
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** Whether a point of icon.svg's 32×32 grid is in the bubble: `M8 10h16v10H14l-5 4v-4H8z`. */
function inBubble(u, v) {
  if (u >= 8 && u <= 24 && v >= 10 && v <= 20) return true;
  // The tail: the triangle (9,20) (14,20) (9,24).
  return u >= 9 && v >= 20 && v <= 24 && (u - 9) / 5 + (v - 20) / 4 <= 1;
}

/** The icon as a PNG of `size` × `size` pixels (RGBA, 4×4 samples a pixel for smooth edges). */
export function iconPng(size) {
  const rows = Buffer.alloc(size * (1 + size * 4));
  for (let y = 0; y < size; y++) {
    const row = y * (1 + size * 4);
    rows[row] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      let inside = 0;
      for (let sy = 0; sy < 4; sy++)
        for (let sx = 0; sx < 4; sx++)
          inside += inBubble(((x + (sx + 0.5) / 4) / size) * 32, ((y + (sy + 0.5) / 4) / size) * 32) ? 1 : 0;
      const share = inside / 16;
      for (let i = 0; i < 4; i++) rows[row + 1 + x * 4 + i] = Math.round(BLUE[i] * (1 - share) + WHITE[i] * share);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8 bits, RGBA, deflate, no filter method, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
