import { describe, expect, it } from "vitest";
import { UserStore } from "chat-gateway/login";
import { HASHES, bearer, login, request, usersFilePerTest, writeUsers } from "./helpers.js";

const users = usersFilePerTest();

describe("http - the user store changes under a running server", () => {
  it("user add turns protection on, removing the last user turns it off, with no restart", async () => {
    const srv = await users.start({ usersFile: users.file });
    const cli = new UserStore(users.file); // the CLI's own code path; test/http/user-cli.test.ts runs the real CLI
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(200);
    await cli.add("alice", HASHES["alice-password"]);
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(401);
    const { body } = await login(srv.url, "alice", "alice-password");
    expect((await request(srv.url, { path: "/api/chats", headers: bearer(body.token) })).status).toBe(200);
    await cli.remove("alice");
    expect((await request(srv.url, { path: "/api/chats" })).status).toBe(200);
    expect((await request(srv.url, { path: "/api/auth/status" })).body.enabled).toBe(false);
  });

  it("removing a user or changing its password ends its sessions", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
    const srv = await users.start({ usersFile: users.file });
    const cli = new UserStore(users.file);
    const alice = (await login(srv.url, "alice", "alice-password")).body.token;
    const bob = (await login(srv.url, "bob", "bob-password")).body.token;
    await cli.setHash("bob", HASHES["alice-password"]);
    expect((await request(srv.url, { path: "/api/x", headers: bearer(bob) })).status).toBe(401);
    expect((await request(srv.url, { path: "/api/x", headers: bearer(alice) })).status).toBe(200);
    await cli.remove("alice");
    expect((await request(srv.url, { path: "/api/x", headers: bearer(alice) })).status).toBe(401);
  });
});
