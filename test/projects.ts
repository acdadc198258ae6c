// Which test files need more than this process (vitest.config.ts's projects). Every other file under
// test/ (but test/browser/, the browser project) is a unit test: it starts no child process and
// reaches neither PostgreSQL nor Redis (test/setup/unit-guard.ts fails one that does), so
// `npm run test:unit` runs it anywhere.

/** Files that run the TypeScript compiler over the whole program: `npm run test:types`, with the type-level tests. */
export const COMPILER = ["test/api-docs.test.ts"];

/**
 * Unit files that replace a module (vi.mock): they run isolated, in the project `unit-mocking`,
 * since the files of every other project share their worker's modules. `npm run test:unit` runs both.
 */
export const MOCKING = ["test/runtime/ai-sdk-v5.test.ts"];

/** Files that reach PostgreSQL or Redis (some also start processes): `npm run test:integration`. */
export const INTEGRATION = [
  "test/bus/redis*.test.ts",
  "test/redis/*.test.ts",
  "test/storage/postgres*.test.ts",
  "test/storage/hook-store.test.ts",
  "test/storage/schedule-store.test.ts",
  "test/multiprocess/*.test.ts",
  "test/gateway/concurrency.test.ts",
  "test/gateway/fuzz.test.ts",
  "test/gateway/read-state.test.ts",
  "test/hooks/webhook-postgres.test.ts",
  "test/http/device-store-contract.test.ts",
  "test/http/logger.test.ts",
  "test/push/action-race.test.ts",
  "test/push/attention-push.test.ts",
  "test/push/read-retraction.test.ts",
  "test/storage/action-tokens.test.ts",
  "test/storage/due-pushes.test.ts",
  "test/storage/page-bytes.test.ts",
  "test/storage/picker-index.test.ts",
  "test/turn-queue/concurrency.test.ts",
  "test/example-server-adopt.test.ts",
  "test/push/durable-push-process.test.ts",
  "test/schedules/schedules-multiprocess.test.ts",
  "test/turn-queue/multiprocess.test.ts",
];

/**
 * Files that start child processes (the example server, the CLIs, sql.js's engine process, openssl, esbuild, npm) and
 * need no service: `npm run test:process`. A file matching INTEGRATION too runs there only.
 */
export const PROCESS = [
  "test/bridges/acp-example-server.test.ts",
  "test/bridges/acp-process.test.ts",
  "test/bridges/acp.test.ts",
  "test/bridges/mcp-example-server.test.ts",
  "test/bridges/mcp-stdio.test.ts",
  "test/client/asks.test.ts",
  "test/client/client.test.ts",
  "test/client/drain-reconnect.test.ts",
  "test/client/network-loss.test.ts",
  "test/client/readme-device.test.ts",
  "test/client/restart.test.ts",
  "test/doors/example-server-doors.test.ts",
  "test/entrypoints.test.ts",
  "test/example-server*.test.ts",
  "test/gateway/asks-restart.test.ts",
  "test/gateway/deletion.test.ts",
  "test/gateway/lifecycle.test.ts",
  "test/gateway/oversized-answers.test.ts",
  "test/gateway/retried-echo.test.ts",
  "test/hooks/hook-cli.test.ts",
  "test/hooks/webhook-sqljs.test.ts",
  "test/http/api-keys-cli.test.ts",
  "test/http/api-keys.test.ts",
  "test/http/device-lineage.test.ts",
  "test/http/devices.test.ts",
  "test/http/revocation.test.ts",
  "test/http/session-digests.test.ts",
  "test/http/tls-cookie.test.ts",
  "test/http/user-cli.test.ts",
  "test/ops/*.test.ts",
  "test/package-contents.test.ts",
  "test/package/*.test.ts",
  "test/protocol/browser-bundle.test.ts",
  "test/push/bounded-push.test.ts",
  "test/push/failing-target.test.ts",
  "test/push/one-event-one-push.test.ts",
  "test/push/vapid.test.ts",
  "test/push/webpush.test.ts",
  "test/runtime/custom-runtime-doc.test.ts",
  "test/schedules/schedule-cli.test.ts",
  "test/schedules/schedules-restart.test.ts",
  "test/shared-state/answered-asks.test.ts",
  "test/shared-state/join.test.ts",
  "test/shared-state/tools.test.ts",
  "test/storage/private-files.test.ts",
  "test/storage/sqljs*.test.ts",
  "test/testing/conformance-kit.test.ts",
  "test/testing/package-kit.test.ts",
  "test/turn-queue/sqljs-crash.test.ts",
];
