// The API key CLI (docs/PROTOCOL.md §19.1), run as the real command in another process:
// `key add NAME [--user USER]` prints the key once and stores only its hash in a 0600 keys.json;
// `key list [--user USER]`; `key remove NAME [--user USER]` by name or id. Without --user the
// users file's only user; with several a usage error. A name is unique per user, also when two
// processes add it at once. A running server takes a new key at once and drops a removed one.
import { spawn } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { apiKeyDigest } from "../../adapters/http/api-key-store.js";
import { Client } from "../gateway/harness.js";
import { askWithKey, cliAdd as add, cliList as list, keyFixture } from "./api-key-server.js";
import { bearer, HASHES, runUserCliProcess, writeUsers } from "./helpers.js";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

const fx = keyFixture();

const keysFile = () => path.join(fx.dir, "keys.json");
const ask = (apiKey: string) => askWithKey(fx.srv.url, apiKey);
const cliAdd = (user: string | undefined, name: string) => add(fx.file, user, name);
const cliList = (user?: string) => list(fx.file, user);

describe("API keys - the CLI", { timeout: 60_000 }, () => {
  it("add prints the key once and stores only its hash in a 0600 keys.json; list shows it; it works on the doors", async () => {
    await fx.start();
    const key = await cliAdd("alice", "laptop");
    const text = await readFile(keysFile(), "utf8");
    expect(text).not.toContain(key);
    expect(text).toContain(apiKeyDigest(key));
    expect((await stat(keysFile())).mode & 0o777).toBe(0o600);
    const listed = await cliList("alice");
    expect(listed).toHaveLength(1);
    expect(listed[0]).toEqual(["alice", expect.any(String), "laptop", expect.stringMatching(/^created \d{4}-/)]);
    expect(listed[0]!.join("\t")).not.toContain(key);
    expect(await cliList("bob")).toEqual([]);
    // Made while the server runs: taken at once.
    expect(await ask(key)).not.toBe("");
  });

  it("list without --user shows every user's keys, users in order", async () => {
    await cliAdd("bob", "phone");
    await cliAdd("alice", "laptop");
    await cliAdd("alice", "open webui");
    const rows = await cliList();
    expect(rows.map((row) => [row[0], row[2]])).toEqual([
      ["alice", "laptop"],
      ["alice", "open webui"],
      ["bob", "phone"],
    ]);
  });

  it("without --user: the only user of a one-user file; with two users a usage error naming --user", async () => {
    const ambiguous = await runUserCliProcess(fx.file, ["key", "add", "laptop"], undefined);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.err).toContain("--user");
    expect(ambiguous.out).toBe("");
    expect((await runUserCliProcess(fx.file, ["key", "remove", "laptop"], undefined)).code).toBe(2);
    expect(await cliList()).toEqual([]);
    await writeUsers(fx.file, { alice: HASHES["alice-password"] });
    await fx.start();
    const key = await cliAdd(undefined, "laptop");
    expect((await cliList()).map((row) => [row[0], row[2]])).toEqual([["alice", "laptop"]]);
    expect(await ask(key)).not.toBe("");
    const removed = await runUserCliProcess(fx.file, ["key", "remove", "laptop"], undefined);
    expect(removed.code, removed.err).toBe(0);
    await expect(ask(key)).rejects.toMatchObject({ status: 401 });
  });

  it("a name is unique per user: a second key of that name is a one-line error, exit 1, nothing stored", async () => {
    await cliAdd("alice", "laptop");
    const again = await runUserCliProcess(fx.file, ["key", "add", "laptop", "--user", "alice"], undefined);
    expect(again.code).toBe(1);
    expect(again.out).toBe("");
    expect(again.err.trim().split("\n")).toEqual([expect.stringContaining("already has a key named laptop")]);
    // Another user may use the name; a name is 1 to 64 printable characters.
    await cliAdd("bob", "laptop");
    for (const bad of ["x".repeat(65), "tab\there", "\u202eevil", "   "]) {
      const run = await runUserCliProcess(fx.file, ["key", "add", bad, "--user", "alice"], undefined);
      expect(run.code, bad).toBe(1);
    }
    await cliAdd("alice", "ü".repeat(64));
    expect((await cliList("alice")).map((row) => row[2])).toEqual(["laptop", "ü".repeat(64)]);
  });

  it("two processes adding the same name at once: exactly one lands", async () => {
    const runs = await Promise.all(
      [1, 2].map(() => runUserCliProcess(fx.file, ["key", "add", "same", "--user", "alice"], undefined)),
    );
    expect(runs.map((r) => r.code).sort()).toEqual([0, 1]);
    expect((await cliList("alice")).map((row) => row[2])).toEqual(["same"]);
  });

  it("remove by name (or by id): that key is 401 on the doors, the user's other key still works", async () => {
    await fx.start();
    const [laptop, phone] = [await cliAdd("alice", "laptop"), await cliAdd("alice", "phone")];
    await cliAdd("bob", "laptop");
    expect(await ask(laptop)).not.toBe("");
    const run = await runUserCliProcess(fx.file, ["key", "remove", "laptop", "--user", "alice"], undefined);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toContain("removed key laptop");
    await expect(ask(laptop)).rejects.toMatchObject({ status: 401 });
    expect(await ask(phone)).not.toBe("");
    // Bob's key of the same name is his own, untouched.
    expect((await cliList()).map((row) => [row[0], row[2]])).toEqual([
      ["alice", "phone"],
      ["bob", "laptop"],
    ]);
    const again = await runUserCliProcess(fx.file, ["key", "remove", "laptop", "--user", "alice"], undefined);
    expect(again.code).toBe(1);
    expect(again.err.trim().split("\n")).toEqual([expect.stringContaining("has no key named laptop")]);
    const phoneId = (await cliList("alice"))[0]![1]!;
    const byId = await runUserCliProcess(fx.file, ["key", "remove", phoneId, "--user", "alice"], undefined);
    expect(byId.code, byId.err).toBe(0);
    await expect(ask(phone)).rejects.toMatchObject({ status: 401 });
  });

  it("an unknown user or a bad command is refused", async () => {
    expect((await runUserCliProcess(fx.file, ["key", "add", "x", "--user", "carol"], undefined)).code).toBe(1);
    expect((await runUserCliProcess(fx.file, ["key", "list", "--user", "carol"], undefined)).code).toBe(1);
    expect((await runUserCliProcess(fx.file, ["key", "list", "alice"], undefined)).code).toBe(2);
    expect((await runUserCliProcess(fx.file, ["key", "add", "--user", "alice"], undefined)).code).toBe(2);
    expect((await runUserCliProcess(fx.file, ["key", "remove", "a", "b", "--user", "alice"], undefined)).code).toBe(2);
    expect((await runUserCliProcess(fx.file, ["key", "add", "x", "--label", "y"], undefined)).code).toBe(2);
  });

  it("the package's binary runs it: chat-gateway key add, then key list", async () => {
    const bin = (args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve, reject) => {
        const child = spawn(...exampleServerCommand(args), {
          cwd: path.resolve(import.meta.dirname, "../.."),
          env: { ...process.env, GATEWAY_USERS_FILE: fx.file, GATEWAY_DATA_DIR: fx.dir },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        child.stdout.on("data", (c) => (out += c));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, out }));
      });
    const added = await bin(["key", "add", "bin", "--user", "alice"]);
    expect(added.code).toBe(0);
    expect(added.out).toMatch(/^key: cgk_/);
    const listed = await bin(["key", "list"]);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/^alice\t[^\t]+\tbin\tcreated /);
  });

  it("two processes adding at once both land", async () => {
    const keys = await Promise.all([cliAdd("alice", "one"), cliAdd("alice", "two")]);
    expect(new Set(keys).size).toBe(2);
    const names = (await cliList("alice")).map((row) => row[2]).sort();
    expect(names).toEqual(["one", "two"]);
  });

  it("a key is removed with its user, and on a password change; its socket closes", async () => {
    await fx.start();
    const [alices, bobs] = [await cliAdd("alice", "a"), await cliAdd("bob", "b")];
    const socket = await Client.connect(fx.srv.ws, { token: alices }, bearer(alices));
    const passwd = await runUserCliProcess(fx.file, ["user", "set-password", "alice"], "a-new-password\n");
    expect(passwd.code, passwd.err).toBe(0);
    await expect(ask(alices)).rejects.toMatchObject({ status: 401 });
    expect(await socket.closedPromise).toBe(4401);
    expect(await cliList("alice")).toEqual([]);
    const removed = await runUserCliProcess(fx.file, ["user", "remove", "bob"], undefined);
    expect(removed.code, removed.err).toBe(0);
    await expect(ask(bobs)).rejects.toMatchObject({ status: 401 });
    expect(await readFile(keysFile(), "utf8")).not.toContain(apiKeyDigest(bobs));
  });
});
