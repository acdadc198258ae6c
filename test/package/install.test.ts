// `npm install chat-gateway` alone is enough for the default path: the bin starts and serves the web
// UI, the default entries load in ESM and CommonJS, and the shipped types check under a strict tsc
// without skipLibCheck. An entry whose optional peer is missing throws one error naming it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { access, symlink } from "node:fs/promises";
import { join } from "node:path";
import {
  freePort,
  packedProject,
  removeProject,
  root,
  run,
  startUntil,
  writeFiles,
} from "../fixtures/packed-project.js";

const DEFAULT_ENTRIES = [
  "chat-gateway",
  "chat-gateway/ws",
  "chat-gateway/storage/sqljs",
  "chat-gateway/login",
  "chat-gateway/devices",
  "chat-gateway/hooks",
  "chat-gateway/media/http",
  "chat-gateway/cli",
  "chat-gateway/client",
];
const OPTIONAL = [
  { entry: "chat-gateway/storage/postgres", peer: "pg" },
  { entry: "chat-gateway/push/fcm", peer: "jose" },
  { entry: "chat-gateway/runtime/ai-sdk", peer: "ai" },
  { entry: "chat-gateway/testing", peer: "vitest" },
  { entry: "chat-gateway/push/webpush", peer: "web-push" },
  { entry: "chat-gateway/metrics", peer: "prom-client" },
];
/** Entries whose types come from an optional peer that ships its own (the user installs it to use them). */
const TYPED_BY_PEER = new Set([
  "chat-gateway/runtime/ai-sdk",
  "chat-gateway/redis",
  "chat-gateway/bus/redis",
  "chat-gateway/testing",
  "chat-gateway/metrics",
]);

let project: string | undefined;
beforeAll(async () => {
  project = await packedProject("cg-install-");
}, 600_000);
afterAll(() => removeProject(project));

const node = (args: string[]) => run(process.execPath, args, { cwd: project! });
const importing = (entry: string) => `await import(${JSON.stringify(entry)});`;
const requiring = (entry: string) => `require(${JSON.stringify(entry)});`;

describe("package - one install", () => {
  it("package - the bin prints its help", async () => {
    const { stdout } = await node(["node_modules/.bin/chat-gateway", "--help"]);
    expect(stdout).toContain("--port N");
  });

  it("package - installs none of the optional peers: web-push, prom-client, pg, nor a thread pool package", async () => {
    for (const name of ["web-push", "prom-client", "piscina", "pg", "jose", "ai", "ioredis"]) {
      const installed = await access(join(project!, "node_modules", name)).then(
        () => true,
        () => false,
      );
      expect(installed, name).toBe(false);
    }
  });

  it("package - the bin starts on sql.js and serves the web UI at /, saying Web Push is off without web-push", async () => {
    const port = await freePort();
    const args = ["node_modules/.bin/chat-gateway", "--port", String(port), "--data-dir", join(project!, "data")];
    const server = await startUntil(process.execPath, args, project!, /listening on/);
    try {
      const page = await fetch(`http://127.0.0.1:${port}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<html/i);
      expect(server.output()).toContain("Web Push off: npm install web-push");
    } finally {
      server.child.kill();
    }
  });

  it("package - the bin with --database-url but without pg exits 1 saying to install pg", async () => {
    const args = [
      "node_modules/.bin/chat-gateway",
      "--port",
      "0",
      "--database-url",
      "postgres://127.0.0.1:9/none",
      "--data-dir",
      join(project!, "pg-data"),
    ];
    const failed = await node(args).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr.trim()).toBe("chat-gateway/storage/postgres needs the package `pg`: npm install pg");
  });

  it("package - the bin with --metrics-port but without prom-client exits 1 saying to install it", async () => {
    const args = ["node_modules/.bin/chat-gateway", "--port", "0", "--metrics-port", "0"];
    const failed = await node([...args, "--data-dir", join(project!, "metrics-data")]).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr.trim()).toBe("chat-gateway/metrics needs the package `prom-client`: npm install prom-client");
  });

  it("package - the default entries load in ESM and CommonJS", async () => {
    await node(["--input-type=module", "-e", DEFAULT_ENTRIES.map(importing).join("\n")]);
    await node(["--input-type=commonjs", "-e", DEFAULT_ENTRIES.map(requiring).join("\n")]);
  });

  it.each(OPTIONAL)(
    "package - $entry without $peer throws one error naming it, in ESM and CommonJS",
    async ({ entry, peer }) => {
      const message = `${entry} needs the package \`${peer}\`: npm install ${peer}`;
      for (const [type, load] of [
        ["module", importing],
        ["commonjs", requiring],
      ] as const) {
        const failed = await node([`--input-type=${type}`, "-e", load(entry)]).then(
          () => undefined,
          (e: { stderr: string }) => e,
        );
        expect(failed, `${type} ${entry}`).toBeDefined();
        expect(failed!.stderr).toContain(message);
      }
    },
  );

  it("package - the shipped types check under tsc --strict without skipLibCheck, the DOM library or @types of optional peers", async () => {
    const entries = (await import(join(root, "entrypoints.mjs"))).entrypoints as Array<{ subpath: string }>;
    const names = entries.map((e) => (e.subpath === "." ? "chat-gateway" : `chat-gateway/${e.subpath.slice(2)}`));
    // A user of those entries has installed their peer, which brings its own types (never @types/pg).
    // `ai`'s own declarations import 'json-schema' without depending on @types/json-schema, so
    // without skipLibCheck they fail in any project: that entry is left to the peer's authors.
    const checked = names.filter((n) => n !== "chat-gateway/runtime/ai-sdk");
    for (const peer of ["ioredis", "vitest", "prom-client"]) {
      await symlink(join(root, "node_modules", peer), join(project!, "node_modules", peer), "dir").catch(() => {});
    }
    expect(names.filter((n) => TYPED_BY_PEER.has(n))).toHaveLength(TYPED_BY_PEER.size);
    const source = checked
      .map((n, i) => `import * as entry${i} from ${JSON.stringify(n)};\nvoid entry${i};`)
      .join("\n");
    await writeFiles(project!, { "check.ts": source, "check.cts": source });
    const tsc = join(root, "node_modules/typescript/bin/tsc");
    const flags = [
      "--strict",
      "--noEmit",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      // A Node project's library: no DOM (sql.js's own types need it, and must not be shipped).
      "--lib",
      "es2022",
    ];
    const result = await node([tsc, ...flags, "check.ts", "check.cts"]).then(
      () => "",
      (e: { stdout: string }) => e.stdout,
    );
    expect(result).toBe("");
  }, 120_000); // tsc over every entry takes 15–20 s on a loaded machine
});
