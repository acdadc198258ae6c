import { manualClock } from "chat-gateway/testing";
import { describe, expect, it } from "vitest";
import { HASHES, bearer, login, request, usersFilePerTest, writeUsers } from "./helpers.js";

const users = usersFilePerTest();

describe("http - lockout over HTTP", () => {
  it("10 failures lock the IP (the 10th still 401), 429 with Retry-After, no extension, no session ended, lifts after 900 s", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"] });
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const srv = await users.start({ usersFile: users.file, clock: clock.now });
    const token = (await login(srv.url, "alice", "alice-password")).body.token;
    // Twelve at once: judged as if one after another, so the 11th and 12th meet the lockout.
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () => login(srv!.url, "alice", "wrong").then((r) => r.status)),
    );
    expect(statuses.sort()).toEqual([...Array(10).fill(401), 429, 429]);
    const locked = await login(srv.url, "alice", "alice-password");
    expect(locked.status).toBe(429);
    expect(locked.body).toEqual({ error: expect.any(String), retry_after: 900 });
    expect(locked.headers["retry-after"]).toBe("900");
    expect((await request(srv.url, { path: "/api/x", headers: bearer(token) })).status).toBe(200);
    // No trusted proxy: a forged X-Forwarded-For does not escape the lockout of the socket's address.
    expect((await login(srv.url, "alice", "alice-password", { "x-forwarded-for": "203.0.113.7" })).status).toBe(429);
    clock.advance(600_000);
    expect((await login(srv.url, "alice", "wrong")).body.retry_after).toBe(300);
    clock.advance(299_000);
    expect((await login(srv.url, "alice", "alice-password")).headers["retry-after"]).toBe("1");
    clock.advance(1_000);
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
  });

  it("a success clears the failures", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"] });
    const srv = await users.start({ usersFile: users.file });
    await Promise.all(Array.from({ length: 9 }, () => login(srv!.url, "alice", "wrong")));
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
    // Without the clearing this would be the 10th failure and lock the address.
    expect((await login(srv.url, "alice", "wrong")).status).toBe(401);
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
  });

  it("behind a trusted proxy the lockout is per forwarded client", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"] });
    const srv = await users.start({ usersFile: users.file, trustProxy: true });
    await Promise.all(
      Array.from({ length: 10 }, () =>
        login(srv!.url, "alice", "wrong", { "x-forwarded-for": "198.51.100.1, 203.0.113.7" }),
      ),
    );
    expect((await login(srv.url, "alice", "alice-password", { "x-forwarded-for": "203.0.113.7" })).status).toBe(429);
    // The left entry is the client's own claim; only the proxy's (rightmost) entry decides.
    expect(
      (await login(srv.url, "alice", "alice-password", { "x-forwarded-for": "203.0.113.7, 203.0.113.8" })).status,
    ).toBe(200);
  });
});

describe("http - a login storm", () => {
  it("more than ten logins at once from one address all get their answer", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"] });
    const srv = await users.start({ usersFile: users.file, workers: 2 });
    const replies = await Promise.all(Array.from({ length: 12 }, () => login(srv!.url, "alice", "alice-password")));
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(200));
  });

  it("logins beyond the bounded queue are refused with 429 at once", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"] });
    const srv = await users.start({ usersFile: users.file, workers: 1, maxLoginQueue: 2, trustProxy: true });
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        login(srv!.url, "alice", "alice-password", { "x-forwarded-for": `192.0.2.${i}` }),
      ),
    );
    const busy = replies.filter((r) => r.status === 429);
    expect(replies.filter((r) => r.status === 200)).toHaveLength(3);
    expect(busy).toHaveLength(5);
    expect(busy[0]!.headers["retry-after"]).toBe("1");
    expect(busy[0]!.body).toEqual({ error: "too many logins at once; try again shortly", retry_after: 1 });
    expect((await login(srv.url, "alice", "alice-password")).status).toBe(200);
  });
});
