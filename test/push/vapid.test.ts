// The VAPID key pair (docs/PROTOCOL.md §16.1): made once, kept 0600, the same pair for every
// process that starts on the same file, never replaced; and the example server's GET /api/push/vapid.
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fileVapidKeys, isVapidKeys } from "chat-gateway/push/webpush";
import { startExample } from "../client/helpers.js";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function dir(): Promise<string> {
  const made = await mkdtemp(path.join(tmpdir(), "cg-vapid-"));
  cleanups.push(() => rm(made, { recursive: true, force: true }));
  return made;
}

describe("VAPID keys", () => {
  it("vapid - made once in a 0600 file; every later or simultaneous call gets the same pair", async () => {
    const file = path.join(await dir(), "vapid.json");
    const pairs = await Promise.all(Array.from({ length: 8 }, () => fileVapidKeys(file)));
    expect(isVapidKeys(pairs[0])).toBe(true);
    for (const pair of pairs) expect(pair).toEqual(pairs[0]);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await fileVapidKeys(file)).toEqual(pairs[0]);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(pairs[0]);
  });

  it("vapid - a file that holds no pair is refused and left as it was", async () => {
    const file = path.join(await dir(), "vapid.json");
    await writeFile(file, '{"publicKey":"x","privateKey":"y"}');
    await expect(fileVapidKeys(file)).rejects.toThrow(/holds no VAPID key pair/);
    expect(await readFile(file, "utf8")).toBe('{"publicKey":"x","privateKey":"y"}');
  });

  it("vapid - the example server keeps its pair in the data folder and answers GET /api/push/vapid with the public key", async () => {
    const data = await dir();
    const server = await startExample(data);
    cleanups.push(() => server.close());
    const kept = JSON.parse(await readFile(path.join(data, "vapid.json"), "utf8"));
    expect((await stat(path.join(data, "vapid.json"))).mode & 0o777).toBe(0o600);
    const res = await fetch(`${server.url}/api/push/vapid`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ public_key: kept.publicKey });
    const posted = await fetch(`${server.url}/api/push/vapid`, { method: "POST" });
    expect(posted.status).toBe(405);
  });
});
