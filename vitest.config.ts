import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { COMPILER, INTEGRATION, PROCESS } from "./test/projects.js";

const root = fileURLToPath(new URL(".", import.meta.url));

// Most test time is spent waiting (sockets, child processes, timers), not computing: twice as many
// workers as cores keeps the cores busy. VITEST_MAX_WORKERS (or --maxWorkers) overrides it.
const workers = Math.max(2, availableParallelism() * 2);

export default defineConfig({
  resolve: {
    alias: [
      { find: /^chat-gateway$/, replacement: `${root}src/index.ts` },
      { find: /^chat-gateway\/protocol$/, replacement: `${root}src/protocol/index.ts` },
      { find: /^chat-gateway\/storage$/, replacement: `${root}src/storage/index.ts` },
      { find: /^chat-gateway\/(.*)$/, replacement: `${root}adapters/$1/index.ts` },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
    maxWorkers: workers,
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
    // `npm test` runs every project; `npm run test:unit` (and test:types, test:integration,
    // test:process, test:browser) one. Which file goes where: test/projects.ts.
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: ["test/browser/**", ...INTEGRATION, ...PROCESS, ...COMPILER],
          // A unit test that starts a process or reaches PostgreSQL or Redis fails, saying where it belongs.
          setupFiles: ["test/setup/unit-guard.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "types",
          // What runs the TypeScript compiler over the whole program, which takes a core for a
          // minute or more and so is not part of every unit run: the API docs' test (typedoc), and
          // the type-level tests (expectTypeOf), checked by the compiler, not only run: every
          // types.test.ts (the core's and each adapter's) and any *.test-d.ts.
          include: COMPILER,
          typecheck: {
            enabled: true,
            include: ["test/**/*.test-d.ts", "test/**/types.test.ts"],
            tsconfig: "./tsconfig.json",
          },
        },
      },
      { extends: true, test: { name: "integration", include: INTEGRATION } },
      { extends: true, test: { name: "process", include: PROCESS, exclude: INTEGRATION } },
      {
        extends: true,
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          // The web UI is built once per run, here, not by each file.
          globalSetup: ["test/browser/build-once.ts"],
        },
      },
    ],
  },
});
