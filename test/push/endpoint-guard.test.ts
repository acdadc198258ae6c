// The Web Push endpoint guard (docs/PROTOCOL.md §16.1): a device must not make the server post
// into its own network, neither by an address in the endpoint nor by a name resolving to one. An
// IPv6 address that carries an IPv4 one (NAT64, 6to4, Teredo, IPv4-mapped or -compatible) is
// judged as that IPv4 address. Each row is an address and whether the server may post to it.
import type { LookupFunction } from "node:net";
import { describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { generateVapidKeys, isPublicEndpoint, webPushSender } from "chat-gateway/push/webpush";
import { subscriber } from "./fake-push-service.js";

const ROWS: Array<[address: string, allowed: boolean, why: string]> = [
  ["8.8.8.8", true, "public IPv4"],
  ["198.20.0.1", true, "just past the benchmarking range"],
  ["2001:4860::8888", true, "public IPv6"],
  ["64:ff9b::808:808", true, "NAT64 of a public IPv4"],
  ["64:ff9b::8.8.8.8", true, "NAT64 of a public IPv4, dotted"],
  ["2002:808:808::1", true, "6to4 of a public IPv4"],
  ["::ffff:8.8.8.8", true, "IPv4-mapped public"],
  ["::8.8.8.8", true, "IPv4-compatible public"],
  ["127.0.0.1", false, "loopback"],
  ["10.1.2.3", false, "private"],
  ["198.18.0.1", false, "benchmarking 198.18.0.0/15"],
  ["198.19.255.254", false, "benchmarking, upper half"],
  ["192.0.0.8", false, "IETF protocol assignments"],
  ["203.0.113.5", false, "documentation"],
  ["::1", false, "IPv6 loopback"],
  ["fec0::1", false, "site-local fec0::/10"],
  ["feff::1", false, "site-local, top of fec0::/10"],
  ["fd00::1", false, "unique local"],
  ["64:ff9b::7f00:1", false, "NAT64 of 127.0.0.1"],
  ["64:ff9b::10.0.0.1", false, "NAT64 of 10.0.0.1, dotted"],
  ["64:ff9b::a9fe:a9fe", false, "NAT64 of the metadata address 169.254.169.254"],
  ["64:ff9b:1::808:808", false, "local-use NAT64 64:ff9b:1::/48: the operator's own translator"],
  ["2002:7f00:1::", false, "6to4 of 127.0.0.1"],
  ["2002:c0a8:101::1", false, "6to4 of 192.168.1.1"],
  ["2002:a9fe:a9fe::", false, "6to4 of 169.254.169.254"],
  ["::7f00:1", false, "IPv4-compatible 127.0.0.1"],
  ["::127.0.0.1", false, "IPv4-compatible 127.0.0.1, dotted"],
  ["::a00:1", false, "IPv4-compatible 10.0.0.1"],
  ["::ffff:7f00:1", false, "IPv4-mapped 127.0.0.1"],
  ["::ffff:c612:1", false, "IPv4-mapped 198.18.0.1"],
  ["2001:0:808:808::80ff:fefe", false, "Teredo whose client is 127.0.1.1"],
  ["2001:0:7f00:1::f7f7:f7f7", false, "Teredo whose server is 127.0.0.1"],
];

describe("web push endpoint guard", () => {
  it.each(ROWS)("endpoint guard - an endpoint at %s is allowed: %s (%s)", (address, allowed) => {
    const host = address.includes(":") ? `[${address}]` : address;
    expect(isPublicEndpoint(new URL(`https://${host}/push/x`))).toBe(allowed);
  });

  const inward = ROWS.filter(([, allowed]) => !allowed);
  it.each(inward)(
    "endpoint guard - a name resolving to %s is refused for good before any connection",
    async (address) => {
      const family = address.includes(":") ? 6 : 4;
      const lookup: LookupFunction = (_host, options, callback) =>
        options.all ? callback(null, [{ address, family }]) : callback(null, address, family);
      const sender = webPushSender({ vapid: generateVapidKeys(), subject: "mailto:ops@example.com", lookup });
      const device = {
        device_id: "tab",
        device_name: "",
        caps: { min_protocol: 1, media: true, push: "webpush", streaming: true },
        last_seen: 0,
        webpush: subscriber("https://push.example.test/push/x").subscription,
      };
      await expect(
        sender.send(ANONYMOUS_OWNER, device, { kind: "notification", title: "t", body: "b" }),
      ).rejects.toMatchObject({ permanent: true, message: expect.stringMatching(/internal address/) });
    },
  );
});
