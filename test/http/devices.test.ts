// Paired devices (docs/PROTOCOL.md §16) over real HTTP on 127.0.0.1 and real ws: pairing codes,
// device tokens in hello, the device list, revocation closing sockets with 4401, restarts.
import { manualClock } from "chat-gateway/testing";
import { chmod, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { deviceTokenDigest } from "../../adapters/http/device-store.js";
import { recordingLogger } from "../fixtures/recording-logger.js";
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
let stack: Stack | undefined;
const clients: Client[] = [];
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
  await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  await stack?.close();
  stack = undefined;
  await cleanup();
});

const JSON_TYPE = { "content-type": "application/json" };

async function tokenOf(username: string, password: string): Promise<string> {
  const reply = await login(stack!.srv.url, username, password);
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

function pair(token: string, body: unknown = {}) {
  return request(stack!.srv.url, {
    method: "POST",
    path: "/api/devices/pair",
    headers: { ...JSON_TYPE, ...bearer(token) },
    body: JSON.stringify(body),
  });
}

function redeem(code: string, deviceName = "phone") {
  return request(stack!.srv.url, {
    method: "POST",
    path: "/api/devices/redeem",
    headers: JSON_TYPE,
    body: JSON.stringify({ code, device_name: deviceName, confirm: true }),
  });
}

function devicesOf(token: string) {
  return request(stack!.srv.url, { path: "/api/devices", headers: bearer(token) });
}

/** Pairs a new device for the holder of `token`; its device id and token. */
async function paired(token: string, name = "phone"): Promise<{ device_id: string; token: string }> {
  const code = await pair(token);
  expect(code.status).toBe(200);
  const done = await redeem(code.body.code, name);
  expect(done.status).toBe(200);
  return done.body;
}

async function connectAs(token: string): Promise<Client> {
  const client = await Client.connect(stack!.ws, {}, bearer(token));
  clients.push(client);
  return client;
}

function closedWithin(client: Client, ms: number): Promise<number | "open"> {
  return Promise.race([client.closedPromise, new Promise<"open">((resolve) => setTimeout(() => resolve("open"), ms))]);
}

describe("paired devices", () => {
  it("pair, redeem, then a hello with the device token works and the device is listed without its token", async () => {
    stack = await startStack({ usersFile: file });
    const session = await tokenOf("alice", "alice-password");
    const code = await pair(session, { name: "kitchen tablet" });
    expect(code.body.code).toMatch(/^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{10}$/);
    expect(code.body.url).toBe(`${stack.srv.url}/?pair=${code.body.code}`);
    const device = await redeem(code.body.code, "my phone");
    expect(device.status).toBe(200);
    expect(device.body.token.length).toBeGreaterThanOrEqual(22);
    // A browser that redeems is signed in: the token is its HttpOnly session cookie.
    expect(device.headers["set-cookie"]).toEqual([
      `gateway_session=${device.body.token}; HttpOnly; SameSite=Lax; Path=/; Max-Age=34560000`,
    ]);
    const client = await connectAs(device.body.token);
    expect((await client.request("channel.list")).type).toBe("channel.list");
    const viaHello = await Client.connect(stack.ws, { token: device.body.token }, bearer(session));
    clients.push(viaHello);
    const list = await devicesOf(device.body.token);
    expect(list.status).toBe(200);
    expect(list.body.devices).toEqual([
      {
        device_id: device.body.device_id,
        name: "my phone",
        created: expect.any(Number),
        last_seen: expect.any(Number),
      },
    ]);
    expect((await devicesOf(await tokenOf("bob", "bob-password"))).body.devices).toEqual([]);
    const stored = await readFile(path.join(dir, "devices.json"), "utf8");
    expect(stored).not.toContain(device.body.token);
    expect((await stat(path.join(dir, "devices.json"))).mode & 0o777).toBe(0o600);
  });

  it("a wrong, reused or expired code is refused 401 and stores nothing", async () => {
    const clock = manualClock(Date.now());
    stack = await startStack({ usersFile: file, clock: clock.now });
    const session = await tokenOf("alice", "alice-password");
    const wrong = await redeem("ABCDEFGHJK");
    expect(wrong.status).toBe(401);
    expect(wrong.headers["set-cookie"]).toBeUndefined();
    const used = (await pair(session)).body.code as string;
    expect((await redeem(used)).status).toBe(200);
    const again = await redeem(used);
    expect(again.status).toBe(401);
    expect(again.body.error).toBe("invalid, used or expired pairing code");
    const late = (await pair(session)).body.code as string;
    clock.advance(300_001);
    expect((await redeem(late)).status).toBe(401);
    expect((await devicesOf(session)).body.devices).toHaveLength(1);
  });

  it("wrong codes count as failed logins: after 10 the address is locked out of redeem and login alike", async () => {
    stack = await startStack({ usersFile: file });
    const session = await tokenOf("alice", "alice-password");
    for (let i = 0; i < 10; i++) expect((await redeem(`WRONGCODE${i + 2}`)).status).toBe(401);
    const good = (await pair(session)).body.code as string;
    const locked = await redeem(good);
    expect(locked.status).toBe(429);
    expect((await login(stack.srv.url, "alice", "alice-password")).status).toBe(429);
    expect((await devicesOf(session)).body.devices).toEqual([]);
  });

  it("DELETE revokes one device: its token is refused, its socket closes 4401, the other device stays", async () => {
    stack = await startStack({ usersFile: file });
    const session = await tokenOf("alice", "alice-password");
    const phone = await paired(session, "phone");
    const laptop = await paired(session, "laptop");
    const phoneSocket = await connectAs(phone.token);
    const laptopSocket = await connectAs(laptop.token);
    const gone = await request(stack.srv.url, {
      method: "DELETE",
      path: `/api/devices/${phone.device_id}`,
      headers: bearer(session),
    });
    expect(gone.status).toBe(200);
    expect(await closedWithin(phoneSocket, 1000)).toBe(4401);
    expect((await devicesOf(phone.token)).status).toBe(401);
    expect((await laptopSocket.request("channel.list")).type).toBe("channel.list");
    expect((await devicesOf(laptop.token)).body.devices.map((d: { name: string }) => d.name)).toEqual(["laptop"]);
    const unknown = await request(stack.srv.url, {
      method: "DELETE",
      path: `/api/devices/${phone.device_id}`,
      headers: bearer(session),
    });
    expect(unknown.status).toBe(404);
  });

  it("another user cannot revoke or see a device", async () => {
    stack = await startStack({ usersFile: file });
    const phone = await paired(await tokenOf("alice", "alice-password"));
    const bob = await tokenOf("bob", "bob-password");
    expect(
      (
        await request(stack.srv.url, {
          method: "DELETE",
          path: `/api/devices/${phone.device_id}`,
          headers: bearer(bob),
        })
      ).status,
    ).toBe(404);
    expect((await devicesOf(phone.token)).status).toBe(200);
  });

  it("a device token survives a restart of the server; sessions do not", async () => {
    stack = await startStack({ usersFile: file });
    const session = await tokenOf("alice", "alice-password");
    const phone = await paired(session);
    await stack.close();
    stack = await startStack({ usersFile: file });
    expect((await devicesOf(session)).status).toBe(401);
    expect((await devicesOf(phone.token)).status).toBe(200);
    expect((await (await connectAs(phone.token)).request("channel.list")).type).toBe("channel.list");
  });

  it("the 24-hour session expiry does not end a device token; 90 days without use do", async () => {
    const clock = manualClock(Date.now());
    stack = await startStack({ usersFile: file, clock: clock.now });
    const session = await tokenOf("alice", "alice-password");
    const phone = await paired(session);
    clock.advance(25 * 3_600_000);
    expect((await devicesOf(session)).status).toBe(401);
    expect((await devicesOf(phone.token)).status).toBe(200);
    clock.advance(89 * 86_400_000);
    expect((await devicesOf(phone.token)).status).toBe(200);
    clock.advance(90 * 86_400_000 + 1000);
    expect((await devicesOf(phone.token)).status).toBe(401);
  });

  it("pairing needs a session; bad bodies get 400", async () => {
    stack = await startStack({ usersFile: file });
    expect(
      (await request(stack.srv.url, { method: "POST", path: "/api/devices/pair", headers: JSON_TYPE, body: "{}" }))
        .status,
    ).toBe(401);
    expect((await request(stack.srv.url, { path: "/api/devices" })).status).toBe(401);
    const session = await tokenOf("alice", "alice-password");
    expect((await pair(session, { name: "x".repeat(65) })).status).toBe(400);
    const bad = await request(stack.srv.url, {
      method: "POST",
      path: "/api/devices/redeem",
      headers: JSON_TYPE,
      body: JSON.stringify({ code: 5 }),
    });
    expect(bad.status).toBe(400);
  });

  it("the CLI in another process lists a device and revokes it: its socket closes 4401, the other device stays", async () => {
    stack = await startStack({ usersFile: file });
    const session = await tokenOf("alice", "alice-password");
    const phone = await paired(session, "phone");
    const laptop = await paired(session, "laptop");
    const phoneSocket = await connectAs(phone.token);
    const listed = await runUserCliProcess(file, ["device", "list", "alice"], undefined);
    expect(listed.code).toBe(0);
    expect(listed.out).toContain(`${phone.device_id}\tphone\t`);
    const revoked = await runUserCliProcess(file, ["device", "revoke", "alice", phone.device_id], undefined);
    expect(revoked.code).toBe(0);
    expect(await closedWithin(phoneSocket, 1000)).toBe(4401);
    expect((await devicesOf(phone.token)).status).toBe(401);
    expect((await devicesOf(laptop.token)).status).toBe(200);
    expect((await runUserCliProcess(file, ["device", "revoke", "alice", phone.device_id], undefined)).code).toBe(1);
  });

  it("an id that starts with - (paired by an older version) is revoked after --; without it the CLI says so", async () => {
    stack = await startStack({ usersFile: file });
    const phone = await paired(await tokenOf("alice", "alice-password"), "phone");
    await stack.close();
    stack = undefined;
    const devicesFile = path.join(dir, "devices.json");
    const old = "-2jqovRUPcDbENbf";
    await writeFile(devicesFile, (await readFile(devicesFile, "utf8")).replace(phone.device_id, old), { mode: 0o600 });
    const bare = await runUserCliProcess(file, ["device", "revoke", "alice", old], undefined);
    expect(bare.code).toBe(2);
    expect(bare.err).toContain(`unknown option ${old} (an id starting with - goes after --)`);
    const revoked = await runUserCliProcess(file, ["device", "revoke", "alice", "--", old], undefined);
    expect(revoked).toMatchObject({ code: 0, out: `revoked ${old} (phone) of alice\n` });
    expect(await readFile(devicesFile, "utf8")).not.toContain(old);
  });

  it("the CLI in another process refuses a user that does not exist: exit 1 naming the user, for each device and user command", async () => {
    const commands = [
      ["device", "list", "zed"],
      ["device", "revoke", "zed", "some-device"],
      ["user", "remove", "zed"],
      ["user", "set-password", "zed"],
    ];
    const results = await Promise.all(commands.map((args) => runUserCliProcess(file, args, "a new password\n")));
    expect(results).toEqual(commands.map(() => ({ code: 1, out: "", err: "user zed does not exist\n" })));
    // A known user without devices is no error.
    expect(await runUserCliProcess(file, ["device", "list", "bob"], undefined)).toEqual({
      code: 0,
      out: "",
      err: "bob has no paired devices\n",
    });
  });

  it("a new password revokes all of the user's devices; another user's device stays", async () => {
    stack = await startStack({ usersFile: file });
    const phone = await paired(await tokenOf("alice", "alice-password"));
    const bobs = await paired(await tokenOf("bob", "bob-password"));
    const phoneSocket = await connectAs(phone.token);
    expect((await runUserCliProcess(file, ["user", "set-password", "alice"], "a new password\n")).code).toBe(0);
    expect(await closedWithin(phoneSocket, 1000)).toBe(4401);
    expect((await devicesOf(phone.token)).status).toBe(401);
    expect((await devicesOf(bobs.token)).status).toBe(200);
  });

  it("a new password set while the server is stopped still revokes the user's devices", async () => {
    stack = await startStack({ usersFile: file });
    const phone = await paired(await tokenOf("alice", "alice-password"));
    const bobs = await paired(await tokenOf("bob", "bob-password"));
    await stack.close();
    stack = undefined;
    expect((await runUserCliProcess(file, ["user", "set-password", "alice"], "a new password\n")).code).toBe(0);
    stack = await startStack({ usersFile: file });
    expect((await devicesOf(phone.token)).status).toBe(401);
    expect((await devicesOf(bobs.token)).status).toBe(200);
  });

  it("a devices file other users may write is not trusted: device tokens and the devices API get 500 with one log line naming the fix, the CLIs refuse; chmod 600 restores it", async () => {
    const logger = recordingLogger();
    stack = await startStack({ usersFile: file, logger });
    const session = await tokenOf("alice", "alice-password");
    const phone = await paired(session);
    // Another local user, let in by a careless chmod, adds a device of alice whose token they know.
    const devicesFile = path.join(dir, "devices.json");
    await chmod(devicesFile, 0o666);
    const stored = JSON.parse(await readFile(devicesFile, "utf8"));
    const forged = { ...stored.devices[0], device_id: "forged", token_sha256: deviceTokenDigest("forged-token") };
    await writeFile(devicesFile, JSON.stringify({ devices: [...stored.devices, forged] }));
    const refusal = `device store ${devicesFile} is writable by other users (mode 666); check the devices in it, then chmod 600 it`;

    expect((await devicesOf("forged-token")).status).toBe(500);
    expect((await devicesOf(phone.token)).status).toBe(500);
    await expect(connectAs("forged-token")).rejects.toThrow("Unexpected server response: 500");
    expect(logger.lines.error).toEqual([
      `login protection failed on GET /api/devices: ${refusal}`,
      `login protection failed on GET /api/devices: ${refusal}`,
      `login protection failed on upgrade /ws/gateway: ${refusal}`,
    ]);
    // A login session is no device token: it still signs alice in, but a device token in hello fails.
    expect((await request(stack.srv.url, { path: "/api/chats", headers: bearer(session) })).status).toBe(200);
    const viaHello = new Client(stack.ws, bearer(session));
    clients.push(viaHello);
    await viaHello.opened;
    viaHello.send("hello", { token: "forged-token", device_id: "d" }, "h1");
    expect(await viaHello.closedPromise).toBe(1011);
    expect(viaHello.frames[0]).toMatchObject({ type: "error", payload: { code: "internal" } });

    const listed = await runUserCliProcess(file, ["device", "list", "alice"], undefined);
    expect(listed).toMatchObject({ code: 1, out: "", err: `${refusal}\n` });
    // A new password would leave the devices it must revoke in the file: refused before it changes.
    const changed = await runUserCliProcess(file, ["user", "set-password", "alice"], "a new password\n");
    expect(changed).toMatchObject({ code: 1, err: `${refusal}\n` });
    expect((await login(stack.srv.url, "alice", "alice-password")).status).toBe(200);

    await writeFile(devicesFile, JSON.stringify(stored));
    await chmod(devicesFile, 0o600);
    expect((await devicesOf(phone.token)).status).toBe(200);
    expect((await devicesOf("forged-token")).status).toBe(401);
  });

  it("terminal text - a device name chosen at pairing is printed escaped by the CLI in another process", async () => {
    stack = await startStack({ usersFile: file });
    // Sets the window title, clears the screen, CSI as one C1 character, DEL, a right-to-left override.
    const phone = await paired(
      await tokenOf("alice", "alice-password"),
      "\u001b]0;owned\u0007\u001b[2J\u009b31m\u007f\u202e",
    );
    const shown = "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x7f\\u202e";
    const listed = await runUserCliProcess(file, ["device", "list", "alice"], undefined);
    expect(listed.out.split("\t").slice(0, 2)).toEqual([phone.device_id, shown]);
    // Only the tabs and the line end the CLI puts there itself.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what the test looks for
    expect(listed.out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    const revoked = await runUserCliProcess(file, ["device", "revoke", "alice", phone.device_id], undefined);
    expect(revoked).toMatchObject({ code: 0, out: `revoked ${phone.device_id} (${shown}) of alice\n` });
  });
});
