/**
 * Where a Web Push may go. Endpoints come from devices, so a device must not make the server post
 * into its own network: neither through an address in the URL ({@link isPublicEndpoint}) nor
 * through a name that resolves to one (`publicOnlyLookup`, which checks the very address
 * the connection is then made to, so a name cannot change its answer in between).
 * @module
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/** Addresses a device must not make the server post to. */
const INTERNAL = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["224.0.0.0", 3],
] as const) {
  INTERNAL.addSubnet(net, bits, "ipv4");
}
// IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) are matched against the IPv4 ranges by BlockList itself.
for (const [net, bits] of [
  ["::", 127],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  INTERNAL.addSubnet(net, bits, "ipv6");
}

/** The code of the error a refused name fails with (a permanent push failure). */
export const INTERNAL_ADDRESS = "EINTERNALADDRESS";

function isInternal(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && INTERNAL.check(address, family === 4 ? "ipv4" : "ipv6");
}

/**
 * The default of `endpointAllowed`: not `localhost`, not an IP literal of a loopback, private,
 * link-local, shared or multicast range. Names are checked when they resolve (`publicOnlyLookup`).
 */
export function isPublicEndpoint(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return false;
  return !isInternal(host);
}

/**
 * A socket `lookup` that resolves a name with `resolve` (default Node's `dns.lookup`) and fails
 * with {@link INTERNAL_ADDRESS} when any address it gives is internal.
 */
export function publicOnlyLookup(resolve: LookupFunction = dnsLookup as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family);
      const found: LookupAddress[] = Array.isArray(address) ? address : [{ address, family: family ?? 4 }];
      if (!found.some((a) => isInternal(a.address))) return callback(null, address, family);
      const refused = Object.assign(
        new Error(`${hostname} resolves to an internal address; the server does not post into its own network`),
        { code: INTERNAL_ADDRESS },
      );
      callback(refused, address, family);
    });
  };
}
