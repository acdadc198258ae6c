import https from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { createLoginProtection, memorySessionStore } from "chat-gateway/login";
import { selfSignedCertificate } from "../fixtures/certificate.js";
import { HASHES, login, usersFilePerTest, writeUsers } from "./helpers.js";

const users = usersFilePerTest();

describe("http - TLS", () => {
  const { key, cert } = selfSignedCertificate();
  let server: https.Server | undefined;
  afterAll(() => server?.close());

  it("over TLS the session cookie is __Host- prefixed and Secure; only that name signs in there", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"] });
    const protection = createLoginProtection({
      usersFile: users.file,
      sessions: memorySessionStore(),
      service: "myapp",
    });
    server = https.createServer({ key, cert }, async (req, res) => {
      if (!(await protection.handle(req, res))) res.end("app");
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const send = (method: string, path: string, headers: Record<string, string>, body?: string) =>
      new Promise<{ status: number; setCookie: string[] | undefined }>((resolve, reject) => {
        const req = https.request(
          { host: "127.0.0.1", port, method, path, rejectUnauthorized: false, headers },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode!, setCookie: res.headers["set-cookie"] });
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    const { setCookie } = await send(
      "POST",
      "/api/auth/login",
      { "content-type": "application/json" },
      JSON.stringify({ username: "alice", password: "alice-password" }),
    );
    expect(setCookie?.[0]).toMatch(
      /^__Host-myapp_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Lax; Path=\/; Max-Age=86400; Secure$/,
    );
    const token = setCookie![0]!.split(";")[0]!.split("=")[1]!;
    expect((await send("GET", "/api/chats", { cookie: `__Host-myapp_session=${token}` })).status).toBe(200);
    // A cookie without the prefix could have been planted by a sibling subdomain or a plain-HTTP page.
    expect((await send("GET", "/api/chats", { cookie: `myapp_session=${token}` })).status).toBe(401);
    const out = await send(
      "POST",
      "/api/auth/logout",
      { cookie: `__Host-myapp_session=${token}`, "content-type": "application/json" },
      "{}",
    );
    expect(out.setCookie).toEqual(["__Host-myapp_session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0; Secure"]);
    expect((await send("GET", "/api/chats", { cookie: `__Host-myapp_session=${token}` })).status).toBe(401);
    server.closeAllConnections();
    await protection.close();
  });

  it("and behind a trusted TLS proxy (X-Forwarded-Proto), not an untrusted one", async () => {
    await writeUsers(users.file, { alice: HASHES["alice-password"] });
    const srv = await users.start({ usersFile: users.file, trustProxy: true });
    expect(
      (await login(srv.url, "alice", "alice-password", { "x-forwarded-proto": "https" })).headers["set-cookie"]![0],
    ).toMatch(/^__Host-gateway_session=.*; Secure$/);
    const untrusted = await users.start({ usersFile: users.file });
    expect(
      (await login(untrusted.url, "alice", "alice-password", { "x-forwarded-proto": "https" })).headers[
        "set-cookie"
      ]![0],
    ).toMatch(/^gateway_session=(?!.*Secure)/);
  });
});
