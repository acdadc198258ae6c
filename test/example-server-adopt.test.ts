// Turning login on keeps the person's chats: the example server run with login off, the first
// `user add` (with the server stopped, or asked through its admin socket while it runs), and the
// new user finds everything made before, on sql.js (the default) and PostgreSQL; with --no-adopt
// the user starts empty and nothing is lost.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { askAdmin } from "../examples/server/hook-cli.js";
import { Client } from "./gateway/harness.js";
import { upload } from "./gateway/media-helpers.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "./fixtures/services.js";
import { runServerCli, startServerProcess, type ServerProcess } from "./example-server-process.js";
import { exampleServerCommand } from "./fixtures/example-server-bundle.js";

const PASSWORD = "correct horse\n";
let running: ServerProcess | undefined;
afterEach(() => {
  running?.child.kill("SIGKILL");
  running = undefined;
});

async function start(env: Record<string, string>): Promise<ServerProcess> {
  running = await startServerProcess(env);
  return running;
}

async function stop(): Promise<void> {
  expect(await running!.stop()).toBe(0);
  running = undefined;
}

/** With login off: a chat with a picture in it; resolves the picture's bytes. */
async function chatAnonymously(server: ServerProcess): Promise<Buffer> {
  const c = await Client.connect(server.ws);
  expect(c.frames[0]!.payload.user).toBeNull();
  const picture = randomBytes(40_000);
  expect((await upload(c, "pic", picture)).payload.ok).toBe(true);
  const { final } = await c.say({ chat_id: "default", text: "tool: hello", media_refs: ["pic"] });
  expect(final.payload.final_text).toBe("You said: hello");
  await c.close();
  return picture;
}

/**
 * `user add alice` on a terminal of its own (`script` gives it a pty), typed to as a person does:
 * each prompt is answered once it shows, `answer` to the question, then the password twice.
 * Resolves what the terminal showed and the exit code.
 */
function addOnTerminal(env: Record<string, string>, answer: string): Promise<{ status: number | null; shown: string }> {
  const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;
  const [command, args] = exampleServerCommand(["user", "add", "alice"]);
  const line = [command, ...args];
  const child = spawn("script", ["-qec", line.map(quote).join(" "), "/dev/null"], {
    cwd: join(import.meta.dirname, ".."),
    env: { ...process.env, ...env },
  });
  const replies: Array<[string, string]> = [
    ["[y/N] ", `${answer}\n`],
    ["Password: ", PASSWORD],
    ["Repeat password: ", PASSWORD],
  ];
  let shown = "";
  child.stdout.on("data", (chunk: Buffer) => {
    shown += chunk.toString();
    while (replies.length > 0 && shown.includes(replies[0]![0], 0)) {
      const [prompt, reply] = replies.shift()!;
      shown = shown.replace(prompt, `${prompt}\u0000`);
      child.stdin.write(reply);
    }
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  return new Promise((resolve) =>
    child.once("exit", (status) => {
      clearTimeout(timer);
      child.stdin.end();
      resolve({ status, shown: shown.replaceAll("\u0000", "") });
    }),
  );
}

/** Signs in as alice: her connection and her bearer header. */
async function signIn(server: ServerProcess): Promise<{ c: Client; auth: Record<string, string> }> {
  const login = await fetch(`${server.base}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "alice", password: "correct horse" }),
  });
  expect(login.status).toBe(200);
  const auth = { authorization: `Bearer ${(await login.json()).token}` };
  const c = await Client.connect(server.ws, {}, auth);
  expect(c.frames[0]!.payload.user).toBe("alice");
  return { c, auth };
}

async function defaultHistory(
  c: Client,
): Promise<Array<{ role: string; text: string; media: Array<{ media_id: string }> }>> {
  return (await c.request("history", { chat_id: "default" })).payload.messages;
}

/** The whole story on one storage: chat, stop, `user add alice`, start, alice sees it all. */
async function adoptThroughRestart(env: Record<string, string>): Promise<void> {
  const picture = await chatAnonymously(await start(env));
  await stop();
  const add = runServerCli(["user", "add", "alice", "--adopt"], env, PASSWORD);
  expect(add.stderr).toBe("");
  expect(add.status).toBe(0);
  // What moves is listed before it happens; the device that chatted while login was off does not move.
  expect(add.stdout).toMatch(
    /^alice will adopt the chats made while login was off: 1 channel \("General"\), with its 2 messages and media; not the device registered while login was off: it gets alice's messages and pushes only once it signs in as alice\nadded alice; login protection is on\nalice adopted the chats made while login was off: 1 channel, 2 messages, 1 media file\n$/,
  );

  const server = await start(env);
  expect(server.output()).toMatch(/login on/);
  const { c, auth } = await signIn(server);
  const history = await defaultHistory(c);
  expect(history.map((m) => [m.role, m.text])).toEqual([
    ["user", "tool: hello"],
    ["assistant", "You said: hello"],
  ]);
  expect(history[0]!.media.map((m) => m.media_id)).toEqual(["pic"]);
  const media = await fetch(`${server.base}/api/media/pic`, { headers: auth });
  expect(media.status).toBe(200);
  expect(Buffer.from(await media.arrayBuffer())).toEqual(picture);
  // The search index moved with the messages.
  const hits = (await c.request("search", { query: "hello", scope: "all" })).payload.hits as Array<{
    message_id: string;
  }>;
  expect(hits.length).toBe(2);
  await c.close();
}

describe("example server - the first user adopts the chats made while login was off", () => {
  it("adopt - sql.js: the chat, its history and its media are alice's after user add and a restart; a second run adopts nothing", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    await adoptThroughRestart(env);
    await stop();
    // A second user is not the first: nothing more is adopted, and alice keeps everything.
    const bob = runServerCli(["user", "add", "bob"], env, PASSWORD);
    expect(bob.status).toBe(0);
    expect(bob.stdout).toBe("added bob\n");
  });

  it("adopt - sql.js: while the server runs, it adopts through the data it holds: alice signs in without a restart and finds the chat", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    const server = await start(env);
    const picture = await chatAnonymously(server);
    const open = await Client.connect(server.ws);
    const add = runServerCli(["user", "add", "alice", "--adopt"], env, PASSWORD);
    expect(add.stderr).toBe("");
    expect(add.status).toBe(0);
    expect(add.stdout).toMatch(
      /^alice will adopt the chats made while login was off: 1 channel \("General"\), with its 2 messages and media; not the 2 devices .*\nadded alice; login protection is on\nalice adopted the chats made while login was off: 1 channel, 2 messages, 1 media file\n$/,
    );
    // Only the first user adopts: the server refuses to move anything once login is on.
    const late = await askAdmin(join(env.GATEWAY_DATA_DIR, "admin.sock"), {
      kind: "adopt",
      action: "run",
      name: "bob",
    });
    expect(late).toEqual({ ok: false, error: "login is on already: only the first user adopts" });
    // Login is on now: the anonymous connection is told to sign in, and alice has it all.
    expect(await open.closedPromise).toBe(4401);
    const { c, auth } = await signIn(server);
    expect(server.output()).toMatch(/login is on now: the users file holds a user/);
    expect((await defaultHistory(c)).map((m) => [m.role, m.text])).toEqual([
      ["user", "tool: hello"],
      ["assistant", "You said: hello"],
    ]);
    expect(Buffer.from(await (await fetch(`${server.base}/api/media/pic`, { headers: auth })).arrayBuffer())).toEqual(
      picture,
    );
    await c.close();
  });

  it("adopt - sql.js: two adoptions asked of the running server at once move the chats to one user only, with no stray media copy", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    const server = await start(env);
    await chatAnonymously(server);
    const media = join(env.GATEWAY_DATA_DIR, "media");
    expect(readdirSync(media)).toHaveLength(1);
    const socket = join(env.GATEWAY_DATA_DIR, "admin.sock");
    const [alice, bob] = await Promise.all(
      ["alice", "bob"].map((name) => askAdmin(socket, { kind: "adopt", action: "run", name })),
    );
    // The first asked moves everything; the other, planned again after it, finds nothing left.
    expect(alice).toEqual({ ok: true, result: expect.objectContaining({ messages: 2, media: 1 }) });
    expect(bob).toEqual({ ok: true, result: null });
    expect(readdirSync(media)).toHaveLength(1);
    expect(server.output()).not.toMatch(/error/i);
  });

  it("adopt - sql.js: with no terminal and no --adopt, nothing is adopted and the CLI says how; alice starts empty", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    await chatAnonymously(await start(env));
    await stop();
    const add = runServerCli(["user", "add", "alice"], env, PASSWORD);
    expect([add.status, add.stderr]).toEqual([0, ""]);
    expect(add.stdout).toMatch(
      /^alice will adopt the chats made while login was off: 1 channel \("General"\), with its 2 messages and media; not the device .*\nnot adopted \(no terminal to ask\): .*add it again with --adopt\nadded alice; login protection is on\n$/,
    );
    const { c } = await signIn(await start(env));
    expect(await defaultHistory(c)).toEqual([]);
    await c.close();
  }, 120_000);

  it("adopt - sql.js: on a terminal, the question answered n adopts nothing; answered y adopts it all", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    await chatAnonymously(await start(env));
    await stop();
    const no = await addOnTerminal(env, "n");
    expect(no.status).toBe(0);
    expect(no.shown).toMatch(/with its 2 messages and media[^\n]*\r?\nAdopt them into alice's history\? \[y\/N\] /);
    expect(no.shown).toMatch(/not adopted: the chats stay with login off/);
    expect(no.shown).not.toMatch(/alice adopted/);
    // The user is removed again: login is off, and the chats are still the anonymous owner's.
    expect(runServerCli(["user", "remove", "alice"], env).status).toBe(0);
    const yes = await addOnTerminal(env, "y");
    expect(yes.status).toBe(0);
    expect(yes.shown).toMatch(/alice adopted the chats made while login was off: 1 channel, 2 messages, 1 media file/);
    const { c } = await signIn(await start(env));
    expect((await defaultHistory(c)).map((m) => m.text)).toEqual(["tool: hello", "You said: hello"]);
    await c.close();
  }, 180_000);

  it("adopt - sql.js: the first user add against a new server with nothing to move adds the user and turns login on", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    const server = await start(env);
    const add = runServerCli(["user", "add", "alice"], env, PASSWORD);
    expect([add.status, add.stdout, add.stderr]).toEqual([0, "added alice; login protection is on\n", ""]);
    const { c } = await signIn(server);
    expect(await defaultHistory(c)).toEqual([]);
    await c.close();
  }, 120_000);

  it("adopt - sql.js: a server that cannot be asked (its admin socket gone) is not bypassed: refused, saying to stop it; login stays off", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    const server = await start(env);
    await chatAnonymously(server);
    rmSync(join(env.GATEWAY_DATA_DIR, "admin.sock"));
    const add = runServerCli(["user", "add", "alice"], env, PASSWORD);
    expect(add.status).toBe(1);
    expect(add.stderr).toMatch(
      /cannot open the storage to adopt the anonymous chats .*stop the server first, or add the user with --no-adopt/,
    );
    expect((await (await fetch(`${server.base}/api/auth/status`)).json()).enabled).toBe(false);
    expect(runServerCli(["user", "list"], env).stdout).toBe("");
  });

  it("adopt - sql.js: with --no-adopt alice starts with an empty workspace, and the chats are still there when login is off again", async () => {
    const env = { GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")) };
    const picture = await chatAnonymously(await start(env));
    await stop();
    const add = runServerCli(["user", "add", "alice", "--no-adopt"], env, PASSWORD);
    expect(add.status).toBe(0);
    expect(add.stdout).toBe("added alice; login protection is on\n");

    let server = await start(env);
    const { c, auth } = await signIn(server);
    expect(await defaultHistory(c)).toEqual([]);
    expect((await fetch(`${server.base}/api/media/pic`, { headers: auth })).status).toBe(404);
    await c.close();
    await stop();

    expect(runServerCli(["user", "remove", "alice"], env).status).toBe(0);
    server = await start(env);
    const anon = await Client.connect(server.ws);
    expect((await defaultHistory(anon)).map((m) => m.text)).toEqual(["tool: hello", "You said: hello"]);
    expect(Buffer.from(await (await fetch(`${server.base}/api/media/pic`)).arrayBuffer())).toEqual(picture);
    await anon.close();
  });
});

const pgAvailable = await postgresAvailable("example server adoption: postgres");

describe.skipIf(!pgAvailable)("example server - adoption on PostgreSQL", () => {
  const schema = `t_${runId()}`;
  afterAll(() => dropSchema(schema));

  it("adopt - postgres: the chat, its history and its media are alice's after user add and a restart", async () => {
    await adoptThroughRestart({
      GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "gw-adopt-")),
      DATABASE_URL,
      DATABASE_SCHEMA: schema,
    });
  });
});
