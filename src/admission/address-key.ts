/**
 * The one rule by which every per-address limit counts a client (docs/PROTOCOL.md §18.4): an IPv4
 * address as is, an IPv4-mapped IPv6 address as its IPv4 address, any other IPv6 address by its
 * /64. A /64 is the block one customer gets, and one machine may use every address in it: counted
 * by the exact address, one host would have no limit at all.
 * @module
 */
import { isIPv6 } from "node:net";

/**
 * The key a per-address limit counts `address` under: `203.0.113.7` as is, `::ffff:203.0.113.7`
 * (and its hex form `::ffff:cb00:7107`) as `203.0.113.7`, `2001:db8:1:2:a:b:c:d` as
 * `2001:db8:1:2::/64`. Anything that is not an IPv6 address (an IPv4 address, or a name a custom
 * `clientAddress` returns) is its own key.
 */
export function addressKey(address: string): string {
  if (!isIPv6(address)) return address;
  const groups = ipv6Groups(address);
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  if (mapped) return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".");
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (a zone `%eth0` dropped, an IPv4 tail as two groups). */
function ipv6Groups(address: string): number[] {
  const bare = address.split("%", 1)[0]!;
  const [head, tail] = bare.split("::", 2) as [string, string | undefined];
  const parse = (part: string | undefined): number[] =>
    part ? part.split(":").flatMap((group) => (group.includes(".") ? ipv4Groups(group) : [parseInt(group, 16)])) : [];
  const front = parse(head);
  const back = parse(tail);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

function ipv4Groups(dotted: string): number[] {
  const [a, b, c, d] = dotted.split(".").map(Number) as [number, number, number, number];
  return [(a << 8) | b, (c << 8) | d];
}
