// Login fails closed (docs/PROTOCOL.md §9.7, §10.2, §10.4), with real processes: the user CLI run
// by root writes its files as the owner of the data folder, so a server running as that account
// still reads them; the CLI works without root; a users file once read that turns unreadable or
// malformed keeps the last good set; on a non-loopback address login never turns off at runtime.
import { chownSync, mkdirSync, mkdtempSync, readdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "./gateway/harness.js";
import { AS_NOBODY, runServerCli, startServerProcess, type ServerProcess } from "./example-server-process.js";

const NOBODY = 65534;
const PASSWORD = "correct horse\n";
const running: ServerProcess[] = [];
afterEach(() => {
  for (const server of running.splice(0)) server.child.kill("SIGKILL");
});

async function start(env: Record<string, string>, args: string[] = [], prefix: string[] = []): Promise<ServerProcess> {
  const server = await startServerProcess(env, args, prefix);
  running.push(server);
  return server;
}

/** A data folder owned by the nobody account, as a service account's would be. */
function nobodysFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "gw-owner-"));
  chownSync(dir, NOBODY, NOBODY);
  return dir;
}

/** Every path under `dir` whose owner is not `uid`. */
function notOwnedBy(dir: string, uid: number): string[] {
  const wrong: string[] = [];
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    if (statSync(join(dir, name)).uid !== uid) wrong.push(name);
  }
  return wrong;
}

/** Resolves once the server printed `text` (it looks at the users file every 250 ms). */
async function printed(server: ServerProcess, text: string): Promise<void> {
  for (let i = 0; !server.output().includes(text); i++) {
    if (i > 600) throw new Error(`never printed ${text}: ${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function signIn(server: ServerProcess): Promise<Client> {
  const login = await fetch(`${server.base}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "alice", password: "correct horse" }),
  });
  expect(login.status).toBe(200);
  const c = await Client.connect(server.ws, {}, { authorization: `Bearer ${(await login.json()).token}` });
  expect(c.frames[0]!.payload.user).toBe("alice");
  return c;
}

/** A connection without a session is refused at the upgrade (login is on). */
async function expectAnonymousRefused(server: ServerProcess): Promise<void> {
  await expect(Client.connect(server.ws)).rejects.toThrow(/401/);
}

describe("example server - login fails closed", () => {
  it("users file - the CLI run by root writes as the data folder's owner, so the server running as that account starts with login on", async () => {
    const env = { GATEWAY_DATA_DIR: nobodysFolder() };
    const before = await start(env, [], AS_NOBODY);
    const c = await Client.connect(before.ws);
    expect((await c.say({ chat_id: "default", text: "hello" })).final.payload.final_text).toBe("You said: hello");
    await c.close();
    expect(await before.stop()).toBe(0);

    const add = runServerCli(["user", "add", "alice", "--adopt"], env, PASSWORD);
    expect(add.stderr).toBe("");
    expect(add.status).toBe(0);
    expect(add.stdout).toMatch(/added alice; login protection is on/);
    // The users file and every database file the adoption touched belong to nobody, as before.
    expect(notOwnedBy(env.GATEWAY_DATA_DIR, NOBODY)).toEqual([]);
    expect(statSync(join(env.GATEWAY_DATA_DIR, "users.json")).mode & 0o777).toBe(0o600);

    const after = await start(env, [], AS_NOBODY);
    expect(after.output()).toMatch(/login on/);
    await expectAnonymousRefused(after);
    const alice = await signIn(after);
    expect(
      (await alice.request("history", { chat_id: "default" })).payload.messages.map((m: { text: string }) => m.text),
    ).toEqual(["hello", "You said: hello"]);
    await alice.close();
  }, 240_000);

  it("users file - the CLI works without root, run as the account that owns the data folder", async () => {
    const env = { GATEWAY_DATA_DIR: nobodysFolder() };
    const add = runServerCli(["user", "add", "bob"], env, PASSWORD, AS_NOBODY);
    expect(add.stderr).toBe("");
    expect(add.status).toBe(0);
    const users = statSync(join(env.GATEWAY_DATA_DIR, "users.json"));
    expect([users.uid, users.mode & 0o777]).toEqual([NOBODY, 0o600]);
    expect(runServerCli(["user", "list"], env, undefined, AS_NOBODY).stdout).toBe("bob\n");
    expect(runServerCli(["user", "remove", "bob"], env, undefined, AS_NOBODY).status).toBe(0);
  }, 120_000);

  it("users file - once read, a malformed or unreadable users file keeps the last good set: anonymous connections stay refused, alice still signs in", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-closed-")) };
    expect(runServerCli(["user", "add", "alice"], env, PASSWORD).status).toBe(0);
    const server = await start(env);
    await expectAnonymousRefused(server);
    const file = join(env.GATEWAY_DATA_DIR, "users.json");

    writeFileSync(`${file}.tmp`, "{users: alice}");
    renameSync(`${file}.tmp`, file);
    await printed(server, "is not valid JSON");
    await expectAnonymousRefused(server);
    expect((await (await fetch(`${server.base}/api/auth/status`)).json()).enabled).toBe(true);
    await (await signIn(server)).close();
    expect(server.output()).toMatch(/keeping the 1 users read before \(login stays on\) until it is fixed/);

    // Root reads every file, so a folder in the file's place stands in for a permission error.
    renameSync(file, `${file}.bad`);
    mkdirSync(file);
    await printed(server, "cannot read user store");
    await expectAnonymousRefused(server);
    await (await signIn(server)).close();
  }, 240_000);

  it("users file - on a non-loopback address a users file that cannot be used is refused at start, also with --allow-open", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-broken-")), GATEWAY_ALLOW_OPEN: "1", PORT: "0" };
    writeFileSync(join(env.GATEWAY_DATA_DIR, "users.json"), "{users: alice}");
    const refused = runServerCli(["--host", "0.0.0.0"], env);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(
      /refusing to listen on 0\.0\.0\.0 with login off: the users file cannot be used \(.*is not valid JSON.*\).*Fix it/,
    );
  }, 120_000);

  it("users file - on a non-loopback address, removing the last user leaves login on: nobody gets in without a session", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-network-")) };
    expect(runServerCli(["user", "add", "alice"], env, PASSWORD).status).toBe(0);
    const server = await start(env, ["--host", "0.0.0.0"]);
    expect(server.output()).toMatch(/login on/);
    const removed = runServerCli(["user", "remove", "alice"], env);
    expect(removed.status).toBe(0);
    await printed(server, "holds no user; login stays on");
    expect((await (await fetch(`${server.base}/api/auth/status`)).json()).enabled).toBe(true);
    await expectAnonymousRefused(server);
  }, 240_000);
});
