import type { BuildOptions } from "esbuild";
import { defineConfig } from "tsup";
import { guardedPeers, optionalPeerGuard } from "./optional-peers.mjs";
import { entrypoints, outName } from "./entrypoints.mjs";

const library = {
  entry: Object.fromEntries(entrypoints.map((e) => [outName(e.subpath), e.source])),
  format: ["esm", "cjs"] as ("esm" | "cjs")[],
  // Declarations come from tsc, per module, after tsup (scripts/build-types.mjs): rollup's
  // bundling of them took 100–175 s of the build, tsc takes about 10 s.
  dts: false,
  sourcemap: true,
  clean: false,
  target: "node20",
  // Adapters import the core by its package name, as an outside adapter would; at run time the
  // package resolves itself, so every entry shares one copy of the core (one GatewayError class).
  // vitest is an optional peer that "chat-gateway/testing" declares its suites with; the user's own
  // vitest must run them, so it is never bundled.
  external: [/^chat-gateway(\/.*)?$/, /^vitest(\/.*)?$/],
  // An optional peer is loaded through a guard, so a missing one throws one error naming it.
  noExternal: guardedPeers,
  esbuildPlugins: [optionalPeerGuard()],
  // The three uses of import.meta (passwords.ts, sqljs engine-process.ts and snapshot.ts) test
  // `typeof import.meta.url` and fall back on __filename, so the CommonJS build's empty import.meta
  // is expected there: esbuild's warning about it is silenced for that format only.
  esbuildOptions(options: BuildOptions, { format }: { format: string }) {
    if (format === "cjs") options.logOverride = { ...options.logOverride, "empty-import-meta": "silent" };
  },
  // Worker threads are loaded by path, next to the bundle that starts them, so each ships as a
  // file of its own: the bcrypt worker beside http.js, the snapshot writer beside storage/sqljs.js.
  async onSuccess() {
    const { copyFile } = await import("node:fs/promises");
    await copyFile("adapters/http/bcrypt-worker.mjs", "dist/bcrypt-worker.mjs");
    await copyFile("adapters/storage/sqljs/sqljs-snapshot-worker.mjs", "dist/storage/sqljs-snapshot-worker.mjs");
  },
};

export default defineConfig([
  library,
  {
    // The database process of storage/sqljs, started by path from beside storage/sqljs.js (both
    // the ESM and the CommonJS bundle start this one ESM file).
    entry: { "storage/sqljs-engine": "adapters/storage/sqljs/engine-main.ts" },
    format: ["esm"],
    target: "node20",
    sourcemap: true,
    clean: false,
    external: [/^chat-gateway(\/.*)?$/, "sql.js"],
  },
  {
    // The example server as the package's bin (`npx chat-gateway`, `chat-gateway user add …`).
    entry: { "bin/chat-gateway": "examples/server/main.ts" },
    format: ["esm"],
    target: "node20",
    sourcemap: true,
    clean: false,
    external: [/^chat-gateway(\/.*)?$/],
    noExternal: guardedPeers,
    esbuildPlugins: [optionalPeerGuard()],
    async onSuccess() {
      const { cp } = await import("node:fs/promises");
      await cp("examples/server/web/dist", "dist/web", { recursive: true });
    },
  },
]);
