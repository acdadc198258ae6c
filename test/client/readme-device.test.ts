// The README's device for a server with login on runs as written: a child process redeems a
// pairing code and connects with the device token in the upgrade's Authorization header.
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { HASHES, login, request, bearer, writeUsers } from "../http/helpers.js";
import { blocks } from "../fixtures/readme-blocks.js";
import { cleanupAfterEach, startExample, tempDir } from "./helpers.js";

const root = path.resolve(import.meta.dirname, "../..");
const cleanups = cleanupAfterEach();

it("README - the signed-in device block pairs with a code and connects as the user", async () => {
  const readme = await readFile(path.join(root, "README.md"), "utf8");
  const device = blocks(readme, "A device in TypeScript", "ts")[1];
  expect(device, "the device section has a second ts block: the device of a server with login on").toBeDefined();
  const { dir, cleanup } = await tempDir();
  cleanups.push(cleanup);
  await writeUsers(path.join(dir, "users.json"), { alice: HASHES["alice-password"] });
  const server = await startExample(dir);
  cleanups.push(() => server.close());

  const session = (await login(server.url, "alice", "alice-password")).body.token as string;
  const paired = await request(server.url, {
    method: "POST",
    path: "/api/devices/pair",
    headers: { ...bearer(session), "content-type": "application/json" },
    body: "{}",
  });
  expect(paired.status).toBe(200);
  // An ES module, as the README's Quick start sets the project up (`npm pkg set type=module`).
  const file = path.join(dir, "device.mts");
  await writeFile(file, device!.replaceAll("8787", String(server.port)));
  // From the repository, so `chat-gateway/client` resolves to its source (tsconfig paths). Through
  // tsx, as a user runs the README's script, not from the tests' build: the script is under test.
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", file, paired.body.code], {
    cwd: root,
    timeout: 60_000,
  });
  expect(stdout).toBe("signed in as alice\n");
}, 90_000);
