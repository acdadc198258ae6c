// Revocation is immediate: a real gateway behind the login protection on 127.0.0.1, real ws
// clients, the user CLI as a child process. Each ended credential closes its sockets with 4401.
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Authenticator } from "chat-gateway";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { HASHES, login, request, runUserCliProcess, startStack, tempDir, writeUsers, type Stack } from "./helpers.js";

/** Resolves the close code, or "open" when the socket is still open after `ms`. */
function closedWithin(client: Client, ms: number): Promise<number | "open"> {
  return Promise.race([client.closedPromise, new Promise<"open">((resolve) => setTimeout(() => resolve("open"), ms))]);
}

/** Still usable: a request gets its answer. */
async function works(client: Client): Promise<boolean> {
  return (await client.request("channel.list")).type === "channel.list";
}

let dir: string;
let cleanup: () => Promise<void>;
let file: string;
let stack: Stack | undefined;
const clients: Client[] = [];
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir());
  file = path.join(dir, "users.json");
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  await stack?.close();
  stack = undefined;
  await cleanup();
});

async function connectAs(token: string): Promise<Client> {
  const client = await Client.connect(stack!.ws, {}, { authorization: `Bearer ${token}` });
  clients.push(client);
  return client;
}

async function tokenOf(username: string, password: string): Promise<string> {
  const reply = await login(stack!.srv.url, username, password);
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

describe("revocation - login on", () => {
  beforeEach(async () => {
    await writeUsers(file, { alice: HASHES["alice-password"], bob: HASHES["bob-password"] });
    stack = await startStack({ usersFile: file });
  });

  it("logout closes the sockets of that session with error auth and 4401 within a second; other sessions stay", async () => {
    const [first, second] = [await tokenOf("alice", "alice-password"), await tokenOf("alice", "alice-password")];
    const a1 = await connectAs(first);
    const a2 = await connectAs(second);
    const out = await request(stack!.srv.url, {
      method: "POST",
      path: "/api/auth/logout",
      headers: { authorization: `Bearer ${first}`, "content-type": "application/json" },
    });
    expect(out.status).toBe(200);
    expect(await closedWithin(a1, 1000)).toBe(4401);
    expect(a1.of("error").at(-1)?.payload.code).toBe("auth");
    expect(await works(a2)).toBe(true);
    expect(a2.closeCode).toBeUndefined();
  });

  it("user remove through the CLI in another process closes that user's sockets; other users stay", async () => {
    const alice = await connectAs(await tokenOf("alice", "alice-password"));
    const bob = await connectAs(await tokenOf("bob", "bob-password"));
    const removed = await runUserCliProcess(file, ["user", "remove", "alice"], undefined);
    expect(removed.code).toBe(0);
    expect(await closedWithin(alice, 1000)).toBe(4401);
    expect(await works(bob)).toBe(true);
  });

  it("set-password through the CLI in another process closes that user's sockets", async () => {
    const alice = await connectAs(await tokenOf("alice", "alice-password"));
    const bob = await connectAs(await tokenOf("bob", "bob-password"));
    const changed = await runUserCliProcess(file, ["user", "set-password", "alice"], "a new password\n");
    expect(changed.code).toBe(0);
    expect(await closedWithin(alice, 1000)).toBe(4401);
    expect(await works(bob)).toBe(true);
  });

  it("gateway.revoke({user}) closes that user's sockets and says how many; a bad revocation is a TypeError", async () => {
    const alice = await connectAs(await tokenOf("alice", "alice-password"));
    const bob = await connectAs(await tokenOf("bob", "bob-password"));
    expect(stack!.gateway.revoke({ user: "alice" })).toBe(1);
    expect(await closedWithin(alice, 1000)).toBe(4401);
    expect(await works(bob)).toBe(true);
    expect(() => stack!.gateway.revoke({} as never)).toThrow(TypeError);
    expect(() => stack!.gateway.revoke({ user: "a", session: "b" } as never)).toThrow(TypeError);
  });
});

describe("revocation - expiry", () => {
  it("a session expiring while its socket is open closes it with 4401", async () => {
    await writeUsers(file, { alice: HASHES["alice-password"] });
    // Sessions last 24 hours: a clock 24 h minus 3 s behind makes this one end 2 to 3 s from now
    // (expires_at is in whole seconds).
    stack = await startStack({ usersFile: file, clock: () => Date.now() - 86_400_000 + 3_000 });
    const alice = await connectAs(await tokenOf("alice", "alice-password"));
    expect(await works(alice)).toBe(true);
    expect(await closedWithin(alice, 500)).toBe("open");
    expect(await closedWithin(alice, 4_000)).toBe(4401);
    expect(alice.of("error").at(-1)?.payload).toMatchObject({ code: "auth" });
  });
});

describe("revocation - login turning on", () => {
  it("the first user added closes the anonymous sockets opened while login was off", async () => {
    stack = await startStack({ usersFile: file });
    const anonymous = await Client.connect(stack.ws);
    clients.push(anonymous);
    expect(anonymous.frames[0]!.payload.user).toBeNull();
    const added = await runUserCliProcess(file, ["user", "add", "alice"], "alice-password\n");
    expect(added.code).toBe(0);
    expect(await closedWithin(anonymous, 1000)).toBe(4401);
  });
});

describe("revocation - a hello being authenticated", () => {
  let harness: Harness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  /**
   * A gateway whose authenticator waits, for the calls `holds` picks, until released; a client
   * whose hello (token "slow") is being authenticated once this resolves.
   */
  async function slowHello(holds: (asked: number, token: string) => boolean) {
    let release!: () => void;
    let asked = 0;
    const slow: Authenticator = {
      async authenticate({ token }) {
        if (holds(++asked, token)) await new Promise<void>((resolve) => (release = resolve));
        return { owner: "alice", user: "alice", sessions: [`s-${token}`] };
      },
    };
    harness = await startGateway({ authenticator: slow });
    const client = new Client(harness.url);
    clients.push(client);
    await client.opened;
    const answer = client.request("hello", { token: "slow", device_id: "d1" });
    while (asked === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    return { client, answer, release: () => release(), asked: () => asked };
  }

  it("1,500 revocations of other sessions while the authenticator runs do not refuse a hello: past 1,000 it is asked again", async () => {
    const slow = await slowHello((asked) => asked === 1);
    for (let i = 0; i < 1500; i++) harness!.gateway.revoke({ session: `s-other-${i}` });
    harness!.gateway.revoke({ user: "bob" });
    slow.release();
    expect((await slow.answer).type).toBe("hello.ok");
    expect(slow.asked()).toBe(2);
    const client = slow.client;
    expect((await client.request("channel.list")).type).toBe("channel.list");
  });

  it("a revocation that arrives while the authenticator runs refuses the hello it covers", async () => {
    const slow = await slowHello((_, token) => token === "slow");
    expect(harness!.gateway.revoke({ session: "s-slow" })).toBe(0);
    slow.release();
    expect((await slow.answer).payload.code).toBe("auth");
    expect(await slow.client.closedPromise).toBe(4401);
    // A later hello is judged on its own.
    const fresh = await Client.connect(harness!.url, { token: "other" });
    clients.push(fresh);
    expect(fresh.frames[0]!.type).toBe("hello.ok");
  });
});
