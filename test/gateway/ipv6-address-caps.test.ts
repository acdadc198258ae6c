// One rule for every per-address cap (docs/PROTOCOL.md §18.4): an IPv6 client counts by its /64,
// an IPv4-mapped one as its IPv4 address. A host with a /64 has 2^64 addresses; counted by the exact
// address it would have no cap at all. The addresses come from a header through `clientAddress`,
// as they do behind a trusted proxy, so distinct IPv6 clients reach a real socket on 127.0.0.1.
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { addressKey, type AuthResult } from "chat-gateway";
import { Client, startGateway, type Harness } from "./harness.js";
import { until } from "../storage/sqljs-helpers.js";

let h: Harness | undefined;
const open: Client[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  for (const c of open.splice(0)) await c.close();
  await h?.close();
  h = undefined;
});

const byHeader = { clientAddress: (req: { headers: Record<string, unknown> }) => String(req.headers["x-client"]) };

/** A socket from `address` that has not sent hello yet. */
async function raw(address: string): Promise<Client> {
  const c = new Client(h!.url, { "x-client": address });
  open.push(c);
  await c.opened;
  return c;
}

async function hello(c: Client, device: string): Promise<string> {
  return (await c.request("hello", { token: "", device_id: device })).type;
}

const KEYS: Array<[string, string]> = [
  ["203.0.113.7", "203.0.113.7"],
  ["::ffff:203.0.113.7", "203.0.113.7"],
  ["::FFFF:cb00:7107", "203.0.113.7"],
  ["2001:db8:1:2:a:b:c:d", "2001:db8:1:2::/64"],
  ["2001:0DB8:0001:0002::1", "2001:db8:1:2::/64"],
  ["2001:db8::1", "2001:db8:0:0::/64"],
  ["fe80::1%eth0", "fe80:0:0:0::/64"],
  ["::1", "0:0:0:0::/64"],
  ["::", "0:0:0:0::/64"],
  ["1:2:3:4:5:6:1.2.3.4", "1:2:3:4::/64"],
  ["not an address", "not an address"],
];

describe("the address key", () => {
  it.each(KEYS)("address key - %s counts as %s", (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});

describe("WebSocket caps by /64", () => {
  it("ipv6 - maxConnectionsPerIp counts a /64 as one address: a third address of the block is refused, another block goes on", async () => {
    h = await startGateway({ maxConnectionsPerIp: 2 }, byHeader);
    expect(await hello(await raw("2001:db8:1:2::1"), "a")).toBe("hello.ok");
    expect(await hello(await raw("2001:db8:1:2:ffff::2"), "b")).toBe("hello.ok");
    const over = await raw("2001:db8:1:2:1:2:3:4");
    expect(await over.closedPromise).toBe(4429);
    expect(over.frames[0]).toMatchObject({ type: "error", payload: { code: "rate_limited" } });
    expect(await hello(await raw("2001:db8:1:3::1"), "c")).toBe("hello.ok");
  });

  it("ipv6 - maxConnectionsPerIp counts an IPv4-mapped address as its IPv4 address", async () => {
    h = await startGateway({ maxConnectionsPerIp: 1 }, byHeader);
    expect(await hello(await raw("198.51.100.9"), "a")).toBe("hello.ok");
    const over = await raw("::ffff:198.51.100.9");
    expect(await over.closedPromise).toBe(4429);
  });

  it("ipv6 - connectRateLimit counts new connections of a /64 together", async () => {
    h = await startGateway({ connectRateLimit: { perSecond: 0.001, burst: 2 } }, byHeader);
    for (const address of ["2001:db8:5:6::1", "2001:db8:5:6::2"]) {
      const c = await raw(address);
      expect(await hello(c, address)).toBe("hello.ok");
      await c.close();
    }
    const over = await raw("2001:db8:5:6::3");
    expect(await over.closedPromise).toBe(4429);
    expect(over.frames[0]).toMatchObject({
      type: "error",
      payload: { code: "rate_limited", message: "too many new connections from this address; reconnect with backoff" },
    });
    expect(await hello(await raw("2001:db8:5:7::1"), "elsewhere")).toBe("hello.ok");
  });

  it("ipv6 - rateLimitPerAddress is one frame budget for every address of a /64", async () => {
    h = await startGateway(
      { rateLimit: { perSecond: 1000, burst: 1000 }, rateLimitPerAddress: { perSecond: 0.001, burst: 12 } },
      byHeader,
    );
    const a = await raw("2001:db8:9:9::a");
    const b = await raw("2001:db8:9:9::b");
    // Two hellos spend two of the block's twelve tokens; the requests share the ten left (a small
    // ping is outside the budgets, docs/PROTOCOL.md §2.4, so the probe is channel.list).
    expect(await hello(a, "a")).toBe("hello.ok");
    expect(await hello(b, "b")).toBe("hello.ok");
    const answers: string[] = [];
    for (let i = 0; i < 8; i++) for (const c of [a, b]) answers.push((await c.request("channel.list", {})).type);
    expect(answers.filter((type) => type === "channel.list")).toHaveLength(10);
    expect(answers.filter((type) => type === "error")).toHaveLength(6);
  });

  it("ipv6 - the upgrades waiting for room count a /64 against maxConnectionsPerIp: one more of the block is answered 503, another block waits", async () => {
    let letGo = () => {};
    const held = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    const result: AuthResult = { owner: "ann", user: null };
    let calls = 0;
    const authenticator = {
      async authenticate() {
        calls++;
        await held;
        return result;
      },
    };
    h = await startGateway({ maxHellosInFlight: 1, maxConnectionsPerIp: 2, authenticator }, byHeader);
    const statuses: Array<number | "open"> = [];
    const upgrade = (address: string, index: number) => {
      const ws = new WebSocket(h!.url, { headers: { "x-client": address } });
      sockets.push(ws);
      ws.on("open", () => {
        statuses[index] = "open";
        ws.send(JSON.stringify({ type: "hello", id: "h", payload: { token: "t", device_id: `d${index}` } }));
      });
      ws.on("unexpected-response", (_request, response) => {
        statuses[index] = response.statusCode ?? 0;
      });
      ws.on("error", () => undefined);
    };
    const waiting = () => h!.gateway.stats().connectionsWaiting;
    upgrade("2001:db8:7:7::1", 0);
    await until(() => calls === 1, "the held hello");
    upgrade("2001:db8:7:7::2", 1);
    upgrade("2001:db8:7:7::3", 2);
    await until(() => waiting() === 2, "two of the block waiting");
    upgrade("2001:db8:7:7::4", 3);
    await until(() => statuses[3] !== undefined, "the third of the block answered");
    expect(statuses[3]).toBe(503);
    upgrade("2001:db8:7:8::1", 4);
    await until(() => waiting() === 3, "another block waiting");
    letGo();
    await until(() => statuses.filter((s) => s === "open").length === 4, "the waiters taken");
    expect(statuses).toEqual(["open", "open", "open", 503, "open"]);
  });
});
