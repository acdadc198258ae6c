import { chmod, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UserStore, UserStoreError, checkUsername } from "chat-gateway/login";
import { checkNewPassword, INVALID_USERNAME_MESSAGE } from "../../adapters/http/user-store.js";
import { HASHES, tempDir, writeUsers } from "./helpers.js";

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

describe("user store - states", () => {
  it("absent: no file, no users", async () => {
    const store = new UserStore(path.join(dir, "users.json"));
    expect(await store.load()).toEqual({ state: "absent", users: new Map() });
    expect(await store.state()).toBe("absent");
  });

  it("empty: a file with no users", async () => {
    const file = path.join(dir, "users.json");
    await writeUsers(file, {});
    const store = new UserStore(file);
    expect((await store.load()).state).toBe("empty");
    expect(await store.state()).toBe("empty");
  });

  it("enabled: at least one user", async () => {
    const file = path.join(dir, "users.json");
    await writeUsers(file, { alice: HASHES["alice-password"] });
    const snap = await new UserStore(file).load();
    expect(snap.state).toBe("enabled");
    expect([...snap.users]).toEqual([["alice", HASHES["alice-password"]]]);
  });

  it("unreadable: the server reads it as no users and says why", async () => {
    // Root reads every file, so a folder in the file's place stands in for a permission error.
    const file = path.join(dir, "users.json");
    await mkdir(file);
    const store = new UserStore(file);
    const snap = await store.load();
    expect(snap.state).toBe("unreadable");
    expect(snap.users.size).toBe(0);
    expect(snap.problem).toContain(file);
    expect(await store.state()).toBe("unreadable");
    await expect(store.read()).rejects.toThrow(UserStoreError);
    await expect(store.read()).rejects.toThrow(file);
  });

  it.each([
    ["666", 0o666],
    ["620", 0o620],
    ["602", 0o602],
  ])(
    "writable by others (mode %s): unreadable for the server and a value error for the CLI, whatever it holds, until chmod 600",
    async (_label, mode) => {
      const file = path.join(dir, "users.json");
      await writeUsers(file, { alice: HASHES["alice-password"] });
      await chmod(file, mode);
      const store = new UserStore(file);
      const snap = await store.load();
      expect(snap).toEqual({
        state: "unreadable",
        users: new Map(),
        problem: `user store ${file} is writable by other users (mode ${mode.toString(8)}); check the users in it, then chmod 600 it`,
      });
      expect(await store.state()).toBe("unreadable");
      await expect(store.add("bob", HASHES["bob-password"])).rejects.toThrow(/writable by other users/);
      expect((await stat(file)).mode & 0o777).toBe(mode); // not rewritten
      await chmod(file, 0o600);
      expect((await store.load()).state).toBe("enabled");
    },
  );

  it.each([
    ["not JSON", "{users: alice}"],
    ["an array", "[]"],
    ["no users object", '{"people": {}}'],
    ["users is a list", '{"users": ["alice"]}'],
  ])("malformed (%s): unreadable, with no users, for the server; a value error for the CLI", async (_label, text) => {
    const file = path.join(dir, "users.json");
    await writeFile(file, text);
    const store = new UserStore(file);
    const snap = await store.load();
    expect(snap.users.size).toBe(0);
    expect(snap.state).toBe("unreadable");
    expect(snap.problem).toContain(file);
    await expect(store.read()).rejects.toThrow(/fix or remove it/);
    await expect(store.add("bob", HASHES["bob-password"])).rejects.toThrow(UserStoreError);
    expect(await readFile(file, "utf8")).toBe(text); // never overwritten
  });

  it("drops only the entries that are not string pairs", async () => {
    const file = path.join(dir, "users.json");
    await writeUsers(file, { alice: HASHES["alice-password"], bob: 12, carol: null, dave: { h: "x" }, erin: ["x"] });
    const snap = await new UserStore(file).load();
    expect([...snap.users.keys()]).toEqual(["alice"]);
    expect(snap.state).toBe("enabled");
    expect(snap.problem).toMatch(/4 entries/);
  });
});

describe("user store - writing", () => {
  it("add creates the parent folders and a 0600 file of bcrypt hashes, atomically (no temp file left)", async () => {
    const file = path.join(dir, "a", "b", "users.json");
    const store = new UserStore(file);
    await store.add("alice", HASHES["alice-password"]);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ users: { alice: HASHES["alice-password"] } });
    expect(await readdir(path.dirname(file))).toEqual(["users.json"]);
    expect(await store.state()).toBe("enabled");
  });

  it("transitions: absent -> enabled by add, enabled -> empty by removing the last user", async () => {
    const file = path.join(dir, "users.json");
    const store = new UserStore(file);
    expect(await store.state()).toBe("absent");
    await store.add("alice", HASHES["alice-password"]);
    await store.add("bob", HASHES["bob-password"]);
    expect(await store.state()).toBe("enabled");
    expect(await store.remove("alice")).toBe(1);
    expect(await store.remove("bob")).toBe(0);
    expect(await store.state()).toBe("empty");
    await store.add("carol", HASHES["bob-password"]);
    expect(await store.state()).toBe("enabled");
  });

  it("each write replaces the file (a new inode), never edits it in place", async () => {
    const file = path.join(dir, "users.json");
    const store = new UserStore(file);
    await store.add("alice", HASHES["alice-password"]);
    const before = (await stat(file)).ino;
    await store.setHash("alice", HASHES["bob-password"]);
    expect((await stat(file)).ino).not.toBe(before);
    expect((await store.read()).get("alice")).toBe(HASHES["bob-password"]);
  });

  it("value errors: duplicate, unknown user on set-password and remove", async () => {
    const store = new UserStore(path.join(dir, "users.json"));
    await store.add("alice", HASHES["alice-password"]);
    await expect(store.add("alice", HASHES["bob-password"])).rejects.toThrow(
      new UserStoreError("user alice already exists"),
    );
    await expect(store.setHash("bob", HASHES["bob-password"])).rejects.toThrow(
      new UserStoreError("user bob does not exist"),
    );
    await expect(store.remove("bob")).rejects.toThrow(new UserStoreError("user bob does not exist"));
  });

  it("a folder that cannot be created is a value error naming it", async () => {
    const blocker = path.join(dir, "file");
    await writeFile(blocker, "x");
    const file = path.join(blocker, "sub", "users.json");
    const error = await new UserStore(file).add("alice", HASHES["alice-password"]).catch((e) => e);
    expect(error).toBeInstanceOf(UserStoreError);
    expect(error.message).toContain(path.join(blocker, "sub"));
    expect(error.message).toContain(file);
  });

  it("a file that cannot be written is a value error naming it", async () => {
    // procfs refuses new files even to root.
    const file = "/proc/self/users.json";
    const error = await new UserStore(file).add("alice", HASHES["alice-password"]).catch((e) => e);
    expect(error).toBeInstanceOf(UserStoreError);
    expect(error.message).toContain(`cannot write user store ${file}`);
  });

  it('a user called "__proto__" stays an ordinary entry', async () => {
    const file = path.join(dir, "users.json");
    const store = new UserStore(file);
    await store.add("__proto__", HASHES["alice-password"]);
    expect(JSON.parse(await readFile(file, "utf8")).users).toHaveProperty("__proto__", HASHES["alice-password"]);
    expect([...(await store.load()).users.keys()]).toEqual(["__proto__"]);
  });
});

describe("user store - the server notices changes without a restart", () => {
  it("current() follows adds, removals, deletion and re-creation", async () => {
    const file = path.join(dir, "users.json");
    const server = new UserStore(file);
    const cli = new UserStore(file);
    expect((await server.current()).state).toBe("absent");
    await cli.add("alice", HASHES["alice-password"]);
    expect((await server.current()).state).toBe("enabled");
    const cached = await server.current();
    expect(await server.current()).toBe(cached); // unchanged file: no re-read
    await cli.setHash("alice", HASHES["bob-password"]);
    expect((await server.current()).users.get("alice")).toBe(HASHES["bob-password"]);
    await cli.remove("alice");
    expect((await server.current()).state).toBe("empty");
    await writeFile(file, "garbage");
    expect((await server.current()).users.size).toBe(0);
  });
});

describe("user store - validation", () => {
  it.each(["a", "A-z_0.9", "x".repeat(32), "alice.smith", "__proto__"])("accepts username %j", (name) => {
    expect(() => checkUsername(name)).not.toThrow();
  });

  it.each(["", "x".repeat(33), "bad name", "al/ice", "ålice", "alice!", "a\nb", "~anonymous"])(
    "rejects username %j with the seed's message",
    (name) => {
      expect(() => checkUsername(name)).toThrow(new UserStoreError(INVALID_USERNAME_MESSAGE));
    },
  );

  it("passwords: not empty, at most 72 bytes of UTF-8", () => {
    expect(() => checkNewPassword("")).toThrow(new UserStoreError("password must not be empty"));
    expect(() => checkNewPassword("x".repeat(72))).not.toThrow();
    expect(() => checkNewPassword("x".repeat(73))).toThrow(/too long: 73 bytes/);
    expect(() => checkNewPassword("é".repeat(36))).not.toThrow(); // 72 bytes
    expect(() => checkNewPassword("é".repeat(37))).toThrow(/too long: 74 bytes/);
  });
});
