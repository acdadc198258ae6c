/**
 * Where a Web Push may go. Endpoints come from devices, so a device must not make the server post
 * into its own network: neither through an address in the URL ({@link isPublicEndpoint}) nor
 * through a name that resolves to one (`publicOnlyLookup`, which checks the very address
 * the connection is then made to, so a name cannot change its answer in between).
 * @module
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import { isInternalAddress } from "./internal-address.js";

/** The code of the error a refused name fails with (a permanent push failure). */
export const INTERNAL_ADDRESS = "EINTERNALADDRESS";

/**
 * The default of `endpointAllowed`: not `localhost`, not an IP literal of a loopback, private,
 * link-local, site-local, shared, benchmarking, documentation or multicast range, nor an IPv6
 * literal carrying such an IPv4 address (NAT64, 6to4, Teredo, IPv4-mapped or -compatible). Names
 * are checked when they resolve (`publicOnlyLookup`).
 */
export function isPublicEndpoint(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return false;
  return !isInternalAddress(host);
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
      if (!found.some((a) => isInternalAddress(a.address))) return callback(null, address, family);
      const refused = Object.assign(
        new Error(`${hostname} resolves to an internal address; the server does not post into its own network`),
        { code: INTERNAL_ADDRESS },
      );
      callback(refused, address, family);
    });
  };
}
