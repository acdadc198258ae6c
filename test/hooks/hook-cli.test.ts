// `hook add|list|rotate|remove` of the example server against the running server (sql.js, which
// holds its data folder), through the admin socket; with login off, and per user with login on.
import { spawn } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { signHookBody } from "chat-gateway/hooks";
import { startServerProcess, type ServerProcess } from "../example-server-process.js";
import { Client } from "../gateway/harness.js";
import { HASHES, request, writeUsers } from "../http/helpers.js";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** `main.ts hook ...` as a person runs it, while the server runs. */
function hookCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(...exampleServerCommand(["hook", ...args]), {
    cwd: join(import.meta.dirname, "../.."),
    env: { ...process.env, ...env },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, out, err })));
}

function post(base: string, hookId: string, secret: string, text: string) {
  const body = JSON.stringify({ text });
  return request(base, {
    method: "POST",
    path: `/api/hooks/${hookId}`,
    headers: { "content-type": "application/json", "x-hook-signature": signHookBody(secret, body) },
    body,
  });
}

function parseNew(out: string): { hookId: string; secret: string } {
  const hookId = /^hook_id: (\S+)$/m.exec(out)?.[1];
  const secret = /^secret: (\S+)$/m.exec(out)?.[1];
  expect(hookId && secret).toBeTruthy();
  return { hookId: hookId!, secret: secret! };
}

describe("hook CLI", () => {
  it("adds, lists, rotates and removes hooks of a running sql.js server; posts land", { timeout: 90_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-hooks-"));
    const env = { GATEWAY_DATA_DIR: dataDir };
    server = await startServerProcess(env);
    expect(statSync(join(dataDir, "admin.sock")).mode & 0o777).toBe(0o600);
    const added = await hookCli(["add", "ci", "--channel", "Builds"], env);
    expect(added.code).toBe(0);
    const first = parseNew(added.out);
    expect((await post(server.base, first.hookId, first.secret, "build passed")).status).toBe(202);
    const listed = await hookCli(["list"], env);
    expect(listed.out.trim()).toBe(`ci\tBuilds\tpost\t${first.hookId}`);
    expect(listed.out).not.toContain(first.secret);
    const rotated = parseNew((await hookCli(["rotate", "ci"], env)).out);
    expect((await post(server.base, first.hookId, first.secret, "old")).status).toBe(404);
    expect((await post(server.base, rotated.hookId, rotated.secret, "new")).status).toBe(202);
    expect((await hookCli(["remove", "ci"], env)).code).toBe(0);
    expect((await post(server.base, rotated.hookId, rotated.secret, "gone")).status).toBe(404);
    const missing = await hookCli(["remove", "ci"], env);
    expect([missing.code, missing.err.trim()]).toEqual([1, 'no hook named "ci"']);
    expect((await hookCli(["add"], env)).code).toBe(2);
  });

  it("with login on, hooks belong to the user named by --user", { timeout: 90_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-hooks-"));
    await writeUsers(join(dataDir, "users.json"), { alice: HASHES["alice-password"] });
    const env = { GATEWAY_DATA_DIR: dataDir };
    server = await startServerProcess(env);
    const noUser = await hookCli(["add", "ci", "--channel", "Builds"], env);
    expect(noUser.code).toBe(2);
    expect((await hookCli(["add", "ci", "--channel", "Builds", "--user", "bob"], env)).code).toBe(1);
    const added = await hookCli(["add", "ci", "--channel", "Builds", "--mode", "turn", "--user", "alice"], env);
    expect(added.code).toBe(0);
    const { hookId, secret } = parseNew(added.out);
    // No session: the signature is the credential.
    expect((await post(server.base, hookId, secret, "hello")).status).toBe(202);
    expect((await hookCli(["list", "--user", "alice"], env)).out).toContain(`ci\tBuilds\tturn\t${hookId}`);
  });

  it("hook list prints a channel name a device chose escaped: it cannot rewrite the terminal", {
    timeout: 90_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-hooks-"));
    const env = { GATEWAY_DATA_DIR: dataDir };
    server = await startServerProcess(env);
    const { hookId } = parseNew((await hookCli(["add", "ci", "--channel", "Builds"], env)).out);
    const device = await Client.connect(server.ws);
    const channels = (await device.request("channel.list", {})).payload.channels as Array<{
      chat_id: string;
      name: string;
    }>;
    const builds = channels.find((c) => c.name === "Builds")!;
    // Sets the window title, clears the screen, then CSI as one C1 character.
    const renamed = await device.request("channel.update", {
      chat_id: builds.chat_id,
      name: "\u001b]0;owned\u0007\u001b[2JBuilds\u009b31m",
    });
    expect(renamed.type).toBe("channel.renamed");
    await device.close();
    const listed = await hookCli(["list"], env);
    expect(listed.out).toBe(`ci\t\\x1b]0;owned\\x07\\x1b[2JBuilds\\x9b31m\tpost\t${hookId}\n`);
  });
});
