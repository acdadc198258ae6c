import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));

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
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
    // Type-level tests (expectTypeOf) are checked by the compiler, not only run: every types.test.ts
    // (the core's and each adapter's) and any *.test-d.ts.
    typecheck: {
      enabled: true,
      include: ["test/**/*.test-d.ts", "test/**/types.test.ts"],
      tsconfig: "./tsconfig.json",
    },
  },
});
