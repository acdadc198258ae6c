// The example server's files are its account's only (docs/PROTOCOL.md §9.7, §10.2), with real
// processes, folders and modes: a data folder and media folder left open to other users are
// tightened at start with a warning each, also with --memory, and a users file others may write
// turns no login on.
import { chmodSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "./gateway/harness.js";
import { HASHES } from "./http/helpers.js";
import { startServerProcess, type ServerProcess } from "./example-server-process.js";

const running: ServerProcess[] = [];
afterEach(() => {
  for (const server of running.splice(0)) server.child.kill("SIGKILL");
});

async function start(env: Record<string, string>, args: string[] = []): Promise<ServerProcess> {
  const server = await startServerProcess(env, args);
  running.push(server);
  return server;
}

/** A data folder at `mode`, whatever the umask. */
function openFolder(mode: number): string {
  const dir = join(mkdtempSync(join(tmpdir(), "gw-private-")), "data");
  mkdirSync(dir);
  chmodSync(dir, mode);
  return dir;
}

function modeOf(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

/** Resolves once the server printed `text` (its warnings go to stderr, its start line to stdout). */
async function printed(server: ServerProcess, text: string): Promise<void> {
  for (let i = 0; !server.output().includes(text); i++) {
    if (i > 50) throw new Error(`never printed ${text}: ${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("example server - private data", () => {
  it("private data - a data folder and media/ created 0777 are 0700 after start, with a warning naming each and its old mode", async () => {
    const dataDir = openFolder(0o777);
    mkdirSync(join(dataDir, "media"));
    chmodSync(join(dataDir, "media"), 0o777);
    const server = await start({ GATEWAY_DATA_DIR: dataDir });
    expect(modeOf(dataDir)).toBe("700");
    expect(modeOf(join(dataDir, "media"))).toBe("700");
    await printed(server, `example server: ${dataDir} was readable by other users (mode 777); changed it to 700`);
    await printed(
      server,
      `media store: ${join(dataDir, "media")} was readable by other users (mode 777); changed it to 700`,
    );
  });

  it("private data - with --memory the data folder, which still holds the users file and admin.sock, is tightened too", async () => {
    const dataDir = openFolder(0o755);
    const server = await start({ GATEWAY_DATA_DIR: dataDir }, ["--memory"]);
    expect(modeOf(dataDir)).toBe("700");
    await printed(server, `example server: ${dataDir} was readable by other users (mode 755); changed it to 700`);
    expect(statSync(join(dataDir, "admin.sock")).isSocket()).toBe(true);
  });

  it("private data - a users file others may write turns no login on: the start line says why, and no user can sign in", async () => {
    const dataDir = openFolder(0o700);
    const file = join(dataDir, "users.json");
    writeFileSync(file, JSON.stringify({ users: { alice: HASHES["alice-password"] } }));
    chmodSync(file, 0o666);
    const server = await start({ GATEWAY_DATA_DIR: dataDir });
    expect(server.output()).toContain(
      `login off: the users file cannot be used (user store ${file} is writable by other users (mode 666); check the users in it, then chmod 600 it)`,
    );
    const login = await fetch(`${server.base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: server.base },
      body: JSON.stringify({ username: "alice", password: "alice-password" }),
    });
    expect(login.status).not.toBe(200);
    // Login is off: a connection is the anonymous owner's, never alice's.
    const c = await Client.connect(server.ws);
    expect(c.frames[0]!.payload.user).not.toBe("alice");
    await c.close();
  });
});
