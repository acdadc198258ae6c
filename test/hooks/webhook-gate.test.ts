// With login on, the login gate lets /api/hooks/ through without a session (the signature is the
// credential) and still answers 401 for every other /api/ path.
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { HASHES, request, startServer, tempDir, writeUsers, type TestServer } from "../http/helpers.js";

let srv: TestServer | undefined;
let cleanup: (() => Promise<void>) | undefined;
afterEach(async () => {
  await srv?.close();
  await cleanup?.();
  srv = cleanup = undefined;
});

it("webhook posts pass the login gate unsigned-in; other API paths stay 401", async () => {
  const dir = await tempDir();
  cleanup = dir.cleanup;
  const file = join(dir.dir, "users.json");
  await writeUsers(file, { alice: HASHES["alice-password"] });
  srv = await startServer({ usersFile: file });
  const hook = await request(srv.url, { method: "POST", path: "/api/hooks/hk_abc", body: "{}" });
  expect(hook.status).toBe(200);
  expect(hook.body).toEqual({ app: "/api/hooks/hk_abc", user: null });
  expect((await request(srv.url, { method: "POST", path: "/api/other", body: "{}" })).status).toBe(401);
  expect((await request(srv.url, { method: "POST", path: "/api/hooks", body: "{}" })).status).toBe(401);
});
