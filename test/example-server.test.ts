// The example server as a person runs it: a child process, its log line, curl-like requests, a ws
// client, the user subcommand sharing the server's default users file, and a clean SIGTERM.
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encodeChunk } from "chat-gateway/protocol";
import { Client } from "./gateway/harness.js";
import { request } from "./http/helpers.js";
import { runServerCli, startServerProcess } from "./example-server-process.js";

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
});

async function start(env: Record<string, string>, args: string[] = []) {
  const server = await startServerProcess(env, args);
  child = server.child;
  return server;
}

const cli = runServerCli;

describe("example server", () => {
  it("example server - starts with no configuration beyond a data dir, chats, and exits 0 on SIGTERM closing sockets with 1012 (it drains, docs/PROTOCOL.md §18)", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-example-"));
    const { base, ws, output } = await start({ GATEWAY_DATA_DIR: dataDir });
    expect(output()).toMatch(/storage .*db, login off: the users file .* does not exist/);
    expect(output()).toMatch(/\/ws\/gateway\), runtime demo \(no model: it echoes\), storage /);
    expect(output()).toMatch(/WARNING: login is OFF/);
    expect(await (await fetch(`${base}/api/ping`)).json()).toEqual({ ok: true });
    const c = await Client.connect(ws);
    expect((await c.say({ chat_id: "default", text: "tool: hello" })).final.payload.final_text).toBe("You said: hello");
    // Text of several lines is echoed on its own paragraph, so a code fence in it still opens.
    expect((await c.say({ chat_id: "default", text: "```js\nx()\n```" })).final.payload.final_text).toBe(
      "You said:\n\n```js\nx()\n```",
    );
    const exited = new Promise<number | null>((r) => child!.once("exit", (code) => r(code)));
    child!.kill("SIGTERM");
    expect(await c.closedPromise).toBe(1012);
    expect(await exited).toBe(0);
  });

  it("example server - user add --no-adopt through the same entry turns login on for the running server; removing the last user opens it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-example-"));
    const env = { GATEWAY_DATA_DIR: dataDir };
    const { base, ws } = await start(env);
    const add = cli(["user", "add", "alice", "--no-adopt"], env, "correct horse\n");
    expect(add.status).toBe(0);
    expect((await (await fetch(`${base}/api/auth/status`)).json()).enabled).toBe(true);
    expect((await fetch(`${base}/api/auth/users`)).status).toBe(401);
    const login = await fetch(`${base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: "correct horse" }),
    });
    const { token } = await login.json();
    const c = await Client.connect(ws, {}, { authorization: `Bearer ${token}` });
    expect(c.frames[0].payload.user).toBe("alice");
    expect(cli(["user", "list"], env).stdout.trim()).toBe("alice");
    expect(cli(["user", "remove", "alice"], env).status).toBe(0);
    expect((await (await fetch(`${base}/api/auth/status`)).json()).enabled).toBe(false);
  });

  it("example server - refuses a non-loopback address while login is off, saying why, unless --allow-open or GATEWAY_ALLOW_OPEN=1", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-example-"));
    const refused = cli(["--host", "0.0.0.0"], { GATEWAY_DATA_DIR: dataDir, PORT: "0" });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 with login off: the users file .* does not exist/);
    expect(refused.stderr).toContain("--allow-open");
    // An unreadable users file is no users: refused the same way.
    const unreadable = cli(["--host", "0.0.0.0", "--users-file", dataDir], { GATEWAY_DATA_DIR: dataDir, PORT: "0" });
    expect(unreadable.status).toBe(1);
    expect(unreadable.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 with login off: the users file cannot be used/);
    const open = await start({ GATEWAY_DATA_DIR: dataDir, GATEWAY_ALLOW_OPEN: "1" }, ["--host", "0.0.0.0"]);
    expect(open.output()).toMatch(/WARNING: login is OFF and 0\.0\.0\.0 is not a loopback address \(--allow-open\)/);
    // Open, yet still local mode: the address it arrived on is served, a foreign host name is not.
    const port = new URL(open.base).port;
    expect(await (await fetch(`http://127.0.0.1:${port}/api/ping`)).json()).toEqual({ ok: true });
    expect(
      (await request(`http://127.0.0.1:${port}`, { path: "/api/ping", headers: { host: "rebind.attacker.example" } }))
        .status,
    ).toBe(421);
    child!.kill("SIGKILL");
    const flagged = await start({ GATEWAY_DATA_DIR: dataDir }, ["--host", "0.0.0.0", "--allow-open"]);
    expect(flagged.output()).toMatch(/login off/);
  });

  it("example server - an uploaded SVG is served as a sandboxed download, a malformed media id is 404, and the data folder is private", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-example-"));
    const { base, ws } = await start({ GATEWAY_DATA_DIR: join(dataDir, "data") });
    const c = await Client.connect(ws);
    const svg = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`);
    c.send("media.upload.start", {
      media_ref: "s1",
      kind: "image",
      mime: "image/svg+xml",
      size: svg.length,
      filename: "x.svg",
    });
    c.raw(Buffer.from(encodeChunk("s1", 0, svg)));
    expect(
      (await c.request("media.upload.end", { media_ref: "s1", sha256: createHash("sha256").update(svg).digest("hex") }))
        .payload.ok,
    ).toBe(true);
    const bad = await c.request("media.upload.start", {
      media_ref: "s2",
      kind: "image",
      mime: "text/html\r\nx: y",
      size: 1,
      filename: "x",
    });
    expect(bad.payload.code).toBe("unsupported");
    const got = await fetch(`${base}/api/media/s1`);
    expect(got.status).toBe(200);
    expect(
      Object.fromEntries([...got.headers].filter(([k]) => /^content-(type|disposition|security)|^x-content/.test(k))),
    ).toEqual({
      "content-type": "image/svg+xml",
      "content-disposition": `attachment; filename="x.svg"; filename*=UTF-8''x.svg`,
      "content-security-policy": "default-src 'none'; sandbox",
      "x-content-type-options": "nosniff",
    });
    expect(Buffer.from(await got.arrayBuffer())).toEqual(svg);
    expect((await fetch(`${base}/api/media/%ZZ`)).status).toBe(404);
    for (const path of ["data", "data/db", "data/media"])
      expect((statSync(join(dataDir, path)).mode & 0o777).toString(8)).toBe("700");
  });

  it("example server - behind --trust-proxy 1 each forwarded client has its own --connections-per-ip budget", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-example-"));
    const { ws } = await start({ GATEWAY_DATA_DIR: dataDir, GATEWAY_CONNECTIONS_PER_IP: "2" }, ["--trust-proxy", "1"]);
    const via = (client: string) => Client.connect(ws, {}, { "x-forwarded-for": client });
    await via("203.0.113.7");
    await via("203.0.113.7");
    await expect(via("203.0.113.7")).rejects.toThrow(/too many connections from this address/);
    // Another client behind the same proxy is not held back by the first one's connections.
    await via("198.51.100.9");
  });

  it("example server - the start line names the runtime, its model and the model server's URL, without credentials", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-example-"));
    const env = { GATEWAY_DATA_DIR: dataDir, OPENAI_API_KEY: "sk-secret" };
    const { output } = await start(env, [
      "--openai-base-url",
      "http://ann:hunter2@127.0.0.1:9/v1?key=sk-query",
      "--openai-model",
      "llama3.2",
    ]);
    expect(output()).toMatch(/, runtime openai-compatible, model llama3\.2 at http:\/\/127\.0\.0\.1:9\/v1, storage /);
    expect(output()).not.toMatch(/hunter2|sk-query|sk-secret/);
  });

  it("example server - --help lists the flags and exits 0; an unknown flag exits 2", () => {
    const help = cli(["--help"], {});
    expect(help.status).toBe(0);
    for (const flag of ["--port", "--host", "--data-dir", "--users-file", "--service", "--openai-base-url"])
      expect(help.stdout).toContain(flag);
    const bad = cli(["--bogus"], {});
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("unknown argument: --bogus");
  });
});
