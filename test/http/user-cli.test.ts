import { spawn } from "node:child_process";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { INVALID_USERNAME_MESSAGE } from "../../adapters/http/user-store.js";
import { terminalText, USER_CLI_USAGE } from "chat-gateway/cli";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";
import {
  HASHES,
  bearer,
  login,
  request,
  runUserCliHere,
  runUserCliProcess,
  startServer,
  tempDir,
  writeUsers,
  type TestServer,
} from "./helpers.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

let dir: string;
let cleanup: () => Promise<void>;
let file: string;
let srv: TestServer | undefined;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
});
afterEach(async () => {
  await srv?.close();
  srv = undefined;
  await cleanup();
});

/** Runs the CLI in this process with real streams; `input` is what standard input holds. */
function cli(argv: string[], options: { input?: string; uid?: number; env?: Record<string, string> } = {}) {
  return runUserCliHere(argv, {
    input: options.input,
    uid: options.uid ?? 0,
    env: options.env ?? { GATEWAY_USERS_FILE: file },
  });
}

describe("user CLI - usage (exit 2)", () => {
  it.each([
    [[]],
    [["user"]],
    [["users", "list"]],
    [["user", "frob"]],
    [["user", "add"]],
    [["user", "add", "alice", "bob"]],
    [["user", "list", "alice"]],
    [["user", "set-password"]],
    [["user", "list", "--bogus"]],
    [["user", "list", "--users-file"]],
    [["user", "add", "alice", "--password", "x"]],
  ])("%j", async (argv) => {
    const { code, err, out } = await cli(argv);
    expect(code).toBe(2);
    expect(err).toContain(USER_CLI_USAGE);
    expect(out).toBe("");
  });

  it("no store path is a usage error; --help prints the usage", async () => {
    expect((await cli(["user", "list"], { env: {} })).code).toBe(2);
    const help = await cli(["user", "--help"]);
    expect(help).toEqual({ code: 0, out: USER_CLI_USAGE, err: "" });
  });
});

describe("user CLI - value errors (exit 1, the message on stderr)", () => {
  it.each([
    ["invalid username", ["user", "add", "bad name"], "pw\n", `${INVALID_USERNAME_MESSAGE}\n`],
    ["username too long", ["user", "add", "x".repeat(33)], "pw\n", `${INVALID_USERNAME_MESSAGE}\n`],
    ["empty password", ["user", "add", "alice"], "\n", "password must not be empty\n"],
    ["no input at all", ["user", "add", "alice"], "", "password must not be empty\n"],
    [
      "password over 72 bytes",
      ["user", "add", "alice"],
      `${"é".repeat(37)}\n`,
      "password is too long: 74 bytes of UTF-8, at most 72 allowed\n",
    ],
    ["set-password of an unknown user", ["user", "set-password", "zed"], "pw\n", "user zed does not exist\n"],
    ["remove of an unknown user", ["user", "remove", "zed"], "", "user zed does not exist\n"],
  ])("%s", async (_label, argv, input, message) => {
    await writeUsers(file, { bob: HASHES["bob-password"] });
    const before = await readFile(file, "utf8");
    expect(await cli(argv, { input })).toEqual({ code: 1, out: "", err: message });
    expect(await readFile(file, "utf8")).toBe(before);
  });

  it("duplicate username on add", async () => {
    await writeUsers(file, { bob: HASHES["bob-password"] });
    expect(await cli(["user", "add", "bob"], { input: "pw\n" })).toEqual({
      code: 1,
      out: "",
      err: "user bob already exists\n",
    });
  });

  it("set-password over 72 bytes", async () => {
    await writeUsers(file, { bob: HASHES["bob-password"] });
    expect(await cli(["user", "set-password", "bob"], { input: `${"x".repeat(73)}\n` })).toMatchObject({
      code: 1,
      err: "password is too long: 73 bytes of UTF-8, at most 72 allowed\n",
    });
  });

  it("a store folder that cannot be created, named in the message", async () => {
    await writeFile(path.join(dir, "blocker"), "");
    const target = path.join(dir, "blocker", "users.json");
    const { code, err } = await cli(["user", "add", "alice", "--users-file", target], { input: "alice-password\n" });
    expect(code).toBe(1);
    expect(err).toContain(`cannot create folder ${path.join(dir, "blocker")} for user store ${target}`);
  });

  it("a store file that cannot be written, named in the message", async () => {
    const { code, err } = await cli(["user", "add", "alice", "--users-file=/proc/self/users.json"], {
      input: "alice-password\n",
    });
    expect(code).toBe(1);
    expect(err).toMatch(/^cannot write user store \/proc\/self\/users\.json: /);
  });

  it("an unreadable store", async () => {
    await mkdir(file);
    const { code, err } = await cli(["user", "list"]);
    expect(code).toBe(1);
    expect(err).toContain(`cannot read user store ${file}`);
  });

  it("no command needs root: remove and set-password run for another effective uid (the real processes are in example-server-users-file.test.ts)", async () => {
    await writeUsers(file, { bob: HASHES["bob-password"], carol: HASHES["bob-password"] });
    expect((await cli(["user", "set-password", "bob"], { input: "new password\n", uid: 1000 })).code).toBe(0);
    expect(await cli(["user", "remove", "carol"], { uid: 1000 })).toEqual({ code: 0, out: "removed carol\n", err: "" });
  });

  it("list neither", async () => {
    await writeUsers(file, { carol: "x", alice: "y", Bob: "z" });
    expect(await cli(["user", "list"], { uid: 1000 })).toEqual({ code: 0, out: "Bob\nalice\ncarol\n", err: "" });
  });
});

describe("user CLI - success (exit 0)", () => {
  it("list of an absent store: nothing, and a note that protection is off", async () => {
    expect(await cli(["user", "list"])).toEqual({ code: 0, out: "", err: "no users: login protection is off\n" });
  });

  it("the store path from the flag beats GATEWAY_USERS_FILE", async () => {
    const other = path.join(dir, "other.json");
    await writeUsers(other, { zed: "x" });
    await writeUsers(file, { amy: "x" });
    expect((await cli(["user", "list", "--users-file", other])).out).toBe("zed\n");
    expect((await cli(["--users-file", other, "user", "list"])).out).toBe("zed\n");
    expect((await cli(["user", "list"])).out).toBe("amy\n");
  });
});

/** Runs the real script as a child process. */
function run(
  args: string[],
  input: string | undefined,
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  return runUserCliProcess(file, args, input, env);
}

describe("user CLI - as a child process against a running server", () => {
  it("user add turns protection on, set-password and remove follow, removing the last user opens the API again", async () => {
    srv = await startServer({ usersFile: file });
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(200);

    expect(await run(["user", "add", "alice"], "first-password\nignored second line\n")).toEqual({
      code: 0,
      out: "added alice; login protection is on\n",
      err: "",
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(file, "utf8"));
    expect(stored.users.alice).toMatch(/^\$2b\$12\$/);
    expect(await readFile(file, "utf8")).not.toContain("first-password");
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(401);
    const first = await login(srv.url, "alice", "first-password");
    expect(first.status).toBe(200);

    expect((await run(["user", "set-password", "alice"], "second-password\r\n")).code).toBe(0);
    expect((await login(srv.url, "alice", "first-password")).status).toBe(401);
    expect((await login(srv.url, "alice", "second-password")).status).toBe(200);
    expect((await request(srv.url, { path: "/api/chats", headers: bearer(first.body.token) })).status).toBe(401);

    expect(await run(["user", "list"], undefined)).toEqual({ code: 0, out: "alice\n", err: "" });
    expect(await run(["user", "remove", "alice"], undefined)).toEqual({
      code: 0,
      out: "removed alice; no users left, login protection is off\n",
      err: "",
    });
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(200);
    expect(await run(["user", "remove", "alice"], undefined)).toEqual({
      code: 1,
      out: "",
      err: "user alice does not exist\n",
    });
    expect((await run(["user", "add", "no way"], "pw\n")).code).toBe(1);
    expect((await run(["user", "frob"], undefined)).code).toBe(2);
  }, 30_000);
});

/** Runs the script on a real terminal (util-linux `script` makes a pty), typing each answer after its prompt. */
function runOnTerminal(args: string[], answers: string[]): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const [node, line] = exampleServerCommand(args, "user-cli");
    const command = [node, ...line].map((a) => `'${a}'`).join(" ");
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      cwd: ROOT,
      env: { ...process.env, GATEWAY_USERS_FILE: file, GATEWAY_DATA_DIR: path.dirname(file) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let screen = "";
    let prompts = 0;
    child.stdout.on("data", (c) => {
      screen += c;
      const seen = (screen.match(/password: /gi) ?? []).length;
      while (prompts < seen && prompts < answers.length) child.stdin.write(`${answers[prompts++]}\r`);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, screen }));
  });
}

describe("user CLI - on a terminal", () => {
  it("prompts twice without echo", async () => {
    const { code, screen } = await runOnTerminal(["user", "add", "bob"], ["tty-secret-1", "tty-secret-1"]);
    expect(screen).toContain("Password: ");
    expect(screen).toContain("Repeat password: ");
    expect(screen).not.toContain("tty-secret");
    expect(code).toBe(0);
    expect(JSON.parse(await readFile(file, "utf8")).users.bob).toMatch(/^\$2b\$12\$/);
  }, 30_000);

  it("refuses two different answers", async () => {
    const { code, screen } = await runOnTerminal(["user", "add", "bob"], ["tty-secret-1", "tty-secret-2"]);
    expect(code).toBe(1);
    expect(screen).toContain("passwords do not match");
    await expect(stat(file)).rejects.toThrow(/ENOENT/);
  }, 30_000);
});

describe("user CLI - names others chose, printed", () => {
  // Sets the window title, clears the screen, CSI as one C1 character, DEL, a right-to-left override.
  const hostile = "\u001b]0;owned\u0007\u001b[2J\u009b31m\u007f\u202e";
  const shown = "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x7f\\u202e";

  it("terminal text - list prints a name from a hand-edited users file escaped, one line each", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"], [`mallory${hostile}\r\nroot`]: HASHES["bob-password"] });
    const listed = await runUserCliProcess(file, ["user", "list"], undefined);
    expect(listed).toMatchObject({ code: 0, out: `alice\nmallory${shown}\\x0d\\x0aroot\n` });
    const unknown = await runUserCliProcess(file, ["user", "remove", `eve${hostile}`], undefined);
    expect(unknown).toMatchObject({ code: 1, err: `user eve${shown} does not exist\n` });
  });

  it("terminal text - keeps every other character, other scripts and emoji included", () => {
    expect(terminalText("Küche – 台所 – مطبخ 🍳")).toBe("Küche – 台所 – مطبخ 🍳");
    expect(terminalText("a\tb\nc\u0000\u2028")).toBe("a\\x09b\\x0ac\\x00\\u2028");
  });
});
