import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { COMPILER, INTEGRATION, MOCKING, PROCESS } from "./test/projects.js";
import { SlowFirstSequencer } from "./test/setup/slow-first.js";

const root = fileURLToPath(new URL(".", import.meta.url));
const EXAMPLE_SERVER = "test/setup/example-server.ts";

// Workers per project group. A unit file computes little and waits on loopback sockets and timers,
// so the unit projects run twice as many files as cores (4 on 2 cores: 51 s instead of 260 s at
// one, measured 2026-12-03). The other projects start servers, CLIs, PostgreSQL clients and
// Chromium, and wait on leases, restarts and PostgreSQL (about 1,040 CPU-seconds a run): on 2
// cores, 2 workers ran the whole suite in 844 s with every test passing and the load at about 4;
// 3 workers took 747 s but put the load at 12 and failed two tests, 4 timed files out. Larger
// machines run one per core. VITEST_MAX_WORKERS overrides both (vitest's --maxWorkers flag does not reach
// a project's setting).
const cores = availableParallelism();
const override = Number(process.env.VITEST_MAX_WORKERS) || undefined;
const unitWorkers = override ?? Math.max(2, cores * 2);
const workers = override ?? Math.max(2, cores);

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
    // sql.js's database and snapshot processes without WebAssembly's optimizing tier: a storage
    // opened and closed costs 0.36 CPU-seconds instead of 0.91 (measured 2026-12-03), and the
    // suite opens hundreds; these databases are small and short-lived (docs: SqlJsStorageOptions).
    env: { CHAT_GATEWAY_SQLJS_EXEC_ARGV: "--liftoff-only" },
    pool: "forks",
    maxWorkers: workers,
    // Projects with their own worker count run as their own group (vitest requires a groupOrder
    // per count); the unit group goes first, so a broken unit test shows within a minute.
    sequence: { groupOrder: 1, sequencer: SlowFirstSequencer },
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
          maxWorkers: unitWorkers,
          sequence: { groupOrder: 0 },
          include: ["test/**/*.test.ts"],
          exclude: ["test/browser/**", ...INTEGRATION, ...PROCESS, ...COMPILER, ...MOCKING],
          // A unit test that starts a process or reaches PostgreSQL or Redis fails, saying where it belongs.
          setupFiles: ["test/setup/unit-guard.ts"],
          // Files share a worker's loaded modules: loading the sources again for each of 120 files
          // was half the unit run's CPU. What a file changes globally it undoes (vi.unstubAllGlobals,
          // mockRestore); a file that replaces a module goes to MOCKING.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "unit-mocking",
          maxWorkers: unitWorkers,
          sequence: { groupOrder: 0 },
          include: MOCKING,
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
      // Both start the example server, its CLIs and the process fixtures from a build made once per
      // run (test/setup/example-server.ts). Their files, like the unit files, share a worker's loaded
      // modules (isolate: false): ten process files took 43 CPU-seconds so instead of 50 to 56 (import
      // 7 to 13 s instead of 24 to 27, measured 2026-12-03). What a file starts it stops; what it
      // changes globally it undoes.
      {
        extends: true,
        test: { name: "integration", isolate: false, include: INTEGRATION, globalSetup: [EXAMPLE_SERVER] },
      },
      {
        extends: true,
        test: {
          name: "process",
          isolate: false,
          include: PROCESS,
          exclude: INTEGRATION,
          globalSetup: [EXAMPLE_SERVER],
        },
      },
      {
        extends: true,
        test: {
          name: "browser",
          isolate: false,
          include: ["test/browser/**/*.test.ts"],
          // The web UI is built once per run, here, not by each file.
          globalSetup: ["test/browser/build-once.ts"],
        },
      },
    ],
  },
});
