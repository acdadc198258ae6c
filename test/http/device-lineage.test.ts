// Paired devices that end for real (docs/PROTOCOL.md §16), over real HTTP and ws on 127.0.0.1 with
// the devices.json store: pairing from a device token needs the password and makes a child that dies
// with its parent; logout with a device token revokes it; the CLI's revoke in another process is never
// undone by the server's pairings; two servers on one folder lose no device; the per-user cap; and
// device-token lookups that do not wait for a stalled write.
import { manualClock } from "chat-gateway/testing";
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Client } from "../gateway/harness.js";
import {
  bearer,
  HASHES,
  login,
  request,
  runUserCliProcess,
  startStack,
  tempDir,
  writeUsers,
  type Stack,
} from "./helpers.js";

let dir: string;
let cleanup: () => Promise<void>;
let file: string;
const stacks: Stack[] = [];
const clients: Client[] = [];
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
  await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  for (const s of stacks.splice(0)) await s.close();
  await cleanup();
});

const JSON_TYPE = { "content-type": "application/json" };

async function start(options: { maxDevicesPerUser?: number; clock?: () => number } = {}): Promise<Stack> {
  const stack = await startStack({ usersFile: file, ...options });
  stacks.push(stack);
  return stack;
}

async function sessionOf(stack: Stack, username: string, password: string): Promise<string> {
  const reply = await login(stack.srv.url, username, password);
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

function pair(stack: Stack, token: string, body: unknown = {}) {
  return request(stack.srv.url, {
    method: "POST",
    path: "/api/devices/pair",
    headers: { ...JSON_TYPE, ...bearer(token) },
    body: JSON.stringify(body),
  });
}

function redeem(stack: Stack, code: string, name = "phone") {
  return request(stack.srv.url, {
    method: "POST",
    path: "/api/devices/redeem",
    headers: JSON_TYPE,
    body: JSON.stringify({ code, device_name: name, confirm: true }),
  });
}

async function paired(stack: Stack, token: string, body: unknown = {}): Promise<{ device_id: string; token: string }> {
  const code = await pair(stack, token, body);
  expect(code.status).toBe(200);
  const done = await redeem(stack, code.body.code);
  expect(done.status).toBe(200);
  return done.body;
}

function devicesOf(stack: Stack, token: string) {
  return request(stack.srv.url, { path: "/api/devices", headers: bearer(token) });
}

async function connectAs(stack: Stack, token: string): Promise<Client> {
  const client = await Client.connect(stack.ws, {}, bearer(token));
  clients.push(client);
  return client;
}

function closedWithin(client: Client, ms: number): Promise<number | "open"> {
  return Promise.race([client.closedPromise, new Promise<"open">((resolve) => setTimeout(() => resolve("open"), ms))]);
}

async function storedIds(): Promise<string[]> {
  const text = await readFile(path.join(dir, "devices.json"), "utf8");
  return (JSON.parse(text).devices as Array<{ device_id: string }>).map((d) => d.device_id);
}

describe("paired devices end for real", () => {
  it("pairing from a device token needs the password; the device it pairs dies with it, sockets closed 4401", async () => {
    const stack = await start();
    const session = await sessionOf(stack, "alice", "alice-password");
    const phone = await paired(stack, session);
    const refused = await pair(stack, phone.token);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe("pairing from a paired device needs the password: send {password}");
    expect((await pair(stack, phone.token, { password: "wrong" })).status).toBe(401);
    const tablet = await paired(stack, phone.token, { password: "alice-password" });
    const grandchild = await paired(stack, tablet.token, { password: "alice-password" });
    const laptop = await paired(stack, session);
    const sockets = await Promise.all([tablet, grandchild, laptop].map((d) => connectAs(stack, d.token)));
    const gone = await request(stack.srv.url, {
      method: "DELETE",
      path: `/api/devices/${phone.device_id}`,
      headers: bearer(session),
    });
    expect(gone.status).toBe(200);
    expect(await closedWithin(sockets[0]!, 2000)).toBe(4401);
    expect(await closedWithin(sockets[1]!, 2000)).toBe(4401);
    for (const d of [phone, tablet, grandchild]) expect((await devicesOf(stack, d.token)).status).toBe(401);
    expect((await sockets[2]!.request("channel.list")).type).toBe("channel.list");
    expect(await storedIds()).toEqual([laptop.device_id]);
  });

  it("a code asked for by a device that is revoked before it is redeemed pairs nothing", async () => {
    const stack = await start();
    const session = await sessionOf(stack, "alice", "alice-password");
    const phone = await paired(stack, session);
    const code = await pair(stack, phone.token, { password: "alice-password" });
    expect(code.status).toBe(200);
    expect(
      (await request(stack.srv.url, { method: "POST", path: "/api/auth/logout", headers: bearer(phone.token) })).status,
    ).toBe(200);
    const late = await redeem(stack, code.body.code);
    expect(late.status).toBe(401);
    expect(await storedIds()).toEqual([]);
  });

  it("logout with a device token revokes that device and the devices it paired: tokens refused, sockets closed 4401", async () => {
    const stack = await start();
    const session = await sessionOf(stack, "alice", "alice-password");
    const phone = await paired(stack, session);
    const tablet = await paired(stack, phone.token, { password: "alice-password" });
    const laptop = await paired(stack, session);
    const phoneSocket = await connectAs(stack, phone.token);
    const tabletSocket = await connectAs(stack, tablet.token);
    const laptopSocket = await connectAs(stack, laptop.token);
    const out = await request(stack.srv.url, {
      method: "POST",
      path: "/api/auth/logout",
      headers: bearer(phone.token),
    });
    expect(out.status).toBe(200);
    expect(await closedWithin(phoneSocket, 2000)).toBe(4401);
    expect(await closedWithin(tabletSocket, 2000)).toBe(4401);
    expect((await devicesOf(stack, phone.token)).status).toBe(401);
    expect((await devicesOf(stack, tablet.token)).status).toBe(401);
    expect((await laptopSocket.request("channel.list")).type).toBe("channel.list");
    expect((await devicesOf(stack, session)).body.devices.map((d: { device_id: string }) => d.device_id)).toEqual([
      laptop.device_id,
    ]);
  });

  it("the CLI in another process revokes a device while the server pairs in a loop: it never comes back", async () => {
    // Six minutes a round: past the redeem budget of one address, and a last_seen write of the phone every tenth round.
    const clock = manualClock(Date.now());
    const stack = await start({ clock: clock.now, maxDevicesPerUser: 1000 });
    const session = await sessionOf(stack, "alice", "alice-password");
    const phone = await paired(stack, session);
    let pairings = 0;
    /** The pairings done when the CLI's revoke returned; the loop goes on until one more is done after it. */
    let during: number | undefined;
    const loop = (async () => {
      while (during === undefined || pairings < 3 || pairings <= during) {
        clock.advance(360_000);
        await paired(stack, session, { name: `loop ${pairings}` });
        pairings++;
        await devicesOf(stack, phone.token);
      }
    })();
    const revoked = await runUserCliProcess(file, ["device", "revoke", "alice", phone.device_id], undefined);
    during = pairings;
    // A pairing after the revoke, not only the one in flight when it returned (which may have
    // finished its pairing before): pairing still works, and its device is stored beside the others.
    await loop;
    expect(revoked).toMatchObject({ code: 0, out: `revoked ${phone.device_id} (phone) of alice\n` });
    expect(await storedIds()).not.toContain(phone.device_id);
    expect(await storedIds()).toHaveLength(pairings);
    expect((await devicesOf(stack, phone.token)).status).toBe(401);
    // The CLI runs as a child process, which takes seconds on a loaded machine.
  }, 90_000);

  it("two servers on one users folder pairing at once lose no device", async () => {
    const [a, b] = [await start(), await start()];
    const onA = await sessionOf(a, "alice", "alice-password");
    const onB = await sessionOf(b, "alice", "alice-password");
    // Four at once on each server: a user has at most 5 open pairing codes per process, and a sixth
    // would retire the first before its redeem (docs/PROTOCOL.md §16).
    const made = await Promise.all(
      Array.from({ length: 8 }, (_, i) => paired(i % 2 === 0 ? a : b, i % 2 === 0 ? onA : onB)),
    );
    expect((await storedIds()).sort()).toEqual(made.map((d) => d.device_id).sort());
    for (const d of made) expect((await devicesOf(b, d.token)).status).toBe(200);
  });

  it("a user's devices are capped: past maxDevicesPerUser a pairing is refused 429 and stores nothing; revoking one makes room", async () => {
    const stack = await start({ maxDevicesPerUser: 2 });
    const session = await sessionOf(stack, "alice", "alice-password");
    const codes = await Promise.all([1, 2, 3].map(() => pair(stack, session)));
    const redeemed = await Promise.all(codes.map((c) => redeem(stack, c.body.code)));
    expect(redeemed.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    const full = redeemed.find((r) => r.status === 429)!;
    expect(full.body.error).toBe("alice already has 2 paired devices, the most allowed; revoke one first");
    expect(full.headers["set-cookie"]).toBeUndefined();
    expect((await pair(stack, session)).status).toBe(429);
    expect(await storedIds()).toHaveLength(2);
    // Another user's devices are not counted.
    await paired(stack, await sessionOf(stack, "bob", "bob-password"));
    const first = redeemed.find((r) => r.status === 200)!.body.device_id as string;
    await request(stack.srv.url, { method: "DELETE", path: `/api/devices/${first}`, headers: bearer(session) });
    await paired(stack, session);
  });

  it("a hello with bob's device token completes while alice's pairing waits for the devices file's lock", async () => {
    const stack = await start();
    const bobs = await paired(stack, await sessionOf(stack, "bob", "bob-password"));
    const session = await sessionOf(stack, "alice", "alice-password");
    const code = await pair(stack, session);
    // Another process (the CLI, a second server) holds the lock: alice's write cannot go on.
    const lock = path.join(dir, "devices.json.lock");
    await writeFile(lock, JSON.stringify({ pid: process.pid }), { mode: 0o600 });
    const order: string[] = [];
    const alices = redeem(stack, code.body.code).then((r) => {
      order.push("alice paired");
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const bob = await connectAs(stack, bobs.token);
    expect((await bob.request("channel.list")).type).toBe("channel.list");
    order.push("bob hello");
    await rm(lock);
    expect((await alices).status).toBe(200);
    expect(order).toEqual(["bob hello", "alice paired"]);
  });
});
