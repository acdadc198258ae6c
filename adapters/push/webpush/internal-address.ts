/**
 * Which IP addresses are inside the server's own network (or nobody's), for the Web Push endpoint
 * guard (docs/PROTOCOL.md §16.1). An IPv6 address that carries an IPv4 one (IPv4-mapped,
 * IPv4-compatible, NAT64, 6to4, Teredo) is judged as that IPv4 address, because a translator or a
 * relay on the way delivers it there.
 * @module
 */
import { BlockList, isIP } from "node:net";

/** IPv4 ranges that are not the public internet (RFC 6890 and its successors). */
const INTERNAL_V4 = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // shared address space (carrier-grade NAT)
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking, used inside networks
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 3], // multicast, reserved and broadcast
] as const) {
  INTERNAL_V4.addSubnet(net, bits, "ipv4");
}

/** IPv6 ranges that are not the public internet; those that embed an IPv4 address are judged below. */
const INTERNAL_V6 = new BlockList();
for (const [net, bits] of [
  ["::", 127], // unspecified and loopback
  ["64:ff9b:1::", 48], // local-use NAT64 (RFC 8215): the operator's own translator
  ["100::", 64], // discard
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated, still routed inside some networks)
  ["ff00::", 8], // multicast
] as const) {
  INTERNAL_V6.addSubnet(net, bits, "ipv6");
}

/**
 * True when `address` (an IP literal; IPv6 with or without a zone) must not be posted to. Anything
 * that is not an IP literal is false: names are judged on the addresses they resolve to.
 * An IPv6 literal that cannot be read is internal (fail closed).
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL_V4.check(address, "ipv4");
  if (family !== 6) return false;
  const bytes = ipv6Bytes(address.replace(/%.*$/, ""));
  if (bytes === undefined) return true;
  if (INTERNAL_V6.check(ipv6Text(bytes), "ipv6")) return true;
  return embeddedIpv4(bytes).some((v4) => INTERNAL_V4.check(v4, "ipv4"));
}

/** The IPv4 addresses an IPv6 address carries, in the forms that deliver to them. */
function embeddedIpv4(bytes: Uint8Array): string[] {
  const v4 = (at: number, invert = false) =>
    Array.from(bytes.subarray(at, at + 4), (b) => (invert ? b ^ 0xff : b)).join(".");
  const zeros = (from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0);
  const found: string[] = [];
  // ::a.b.c.d (IPv4-compatible) and ::ffff:a.b.c.d (IPv4-mapped).
  if (zeros(0, 10) && ((bytes[10] === 0 && bytes[11] === 0) || (bytes[10] === 0xff && bytes[11] === 0xff)))
    found.push(v4(12));
  // 64:ff9b::a.b.c.d (NAT64, RFC 6052).
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b]) && zeros(4, 12)) found.push(v4(12));
  // 2002:aabb:ccdd::/48 (6to4, RFC 3056).
  if (startsWith(bytes, [0x20, 0x02])) found.push(v4(2));
  // 2001:0::/32 (Teredo, RFC 4380): the server's address, and the client's with its bits inverted.
  if (startsWith(bytes, [0x20, 0x01, 0x00, 0x00])) found.push(v4(4), v4(12, true));
  return found;
}

function startsWith(bytes: Uint8Array, prefix: number[]): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

/** The 16 bytes of an IPv6 literal (without a zone), or undefined when it is not one. */
function ipv6Bytes(text: string): Uint8Array | undefined {
  let head = text;
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    if (isIP(dotted[2]) !== 4) return undefined;
    const [a, b, c, d] = dotted[2].split(".").map(Number);
    head = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const left = groups(halves[0]);
  const right = halves.length === 2 ? groups(halves[1]) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const words = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...right];
  const bytes = new Uint8Array(16);
  for (const [i, word] of words.entries()) {
    if (!/^[0-9a-f]{1,4}$/i.test(word)) return undefined;
    const value = Number.parseInt(word, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 0xff;
  }
  return bytes;
}

/** Eight groups of hex, which every BlockList reads the same way. */
function ipv6Text(bytes: Uint8Array): string {
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return words.join(":");
}
