// Behind a reverse proxy without clientAddress every socket shares the proxy's address, and the
// per-address cap would silently cap the whole service (docs/PROTOCOL.md §18.4): the ws adapter
// warns once, naming the option, when one address holds half the cap or an upgrade carries
// X-Forwarded-For; never when clientAddress is given.
import { afterEach, expect, it } from "vitest";
import { Client, startGateway, type Harness } from "../gateway/harness.js";

const harnesses: Harness[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const h of harnesses.splice(0)) await h.close();
});

async function gatewayWithWarnings(ws: Parameters<typeof startGateway>[1] = {}) {
  const warnings: string[] = [];
  const logger = { info() {}, warn: (message: string) => void warnings.push(message), error() {} };
  const harness = await startGateway({ logger, maxConnectionsPerIp: 6 }, ws);
  harnesses.push(harness);
  return { harness, warnings };
}

async function connect(url: string, headers?: Record<string, string>): Promise<Client> {
  const client = await Client.connect(url, {}, headers);
  clients.push(client);
  return client;
}

it("proxy hint - one warning naming clientAddress once one address holds half the cap, not before, not twice", async () => {
  const { harness, warnings } = await gatewayWithWarnings();
  await connect(harness.url);
  await connect(harness.url);
  expect(warnings).toEqual([]);
  await connect(harness.url);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("clientAddress");
  expect(warnings[0]).toContain("--trust-proxy");
  await connect(harness.url);
  await connect(harness.url);
  expect(warnings).toHaveLength(1);
});

it("proxy hint - an upgrade with X-Forwarded-For warns at once", async () => {
  const { harness, warnings } = await gatewayWithWarnings();
  await connect(harness.url, { "x-forwarded-for": "203.0.113.7" });
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain("X-Forwarded-For");
});

it("proxy hint - no warning when clientAddress is given", async () => {
  let n = 0;
  const { harness, warnings } = await gatewayWithWarnings({ clientAddress: () => `198.51.100.${++n}` });
  for (let i = 0; i < 5; i++) await connect(harness.url, { "x-forwarded-for": "203.0.113.7" });
  expect(warnings).toEqual([]);
});
