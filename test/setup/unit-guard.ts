// The unit project's promise (vitest.config.ts): its files start no child process and reach neither
// PostgreSQL nor Redis, so `npm run test:unit` is fast and needs nothing installed. A file that
// breaks it fails here, at the call, saying which list of test/projects.ts it belongs in; the
// check is at runtime because helpers that can spawn are imported by many files that never do.
import { createRequire, syncBuiltinESMExports } from "node:module";

const require = createRequire(import.meta.url);
const childProcess = require("node:child_process") as Record<string, (...args: unknown[]) => unknown>;
const net = require("node:net") as typeof import("node:net");

/** The ports of the services (test/fixtures/services.ts): a connection there is an integration test's. */
function servicePorts(): Map<number, string> {
  const port = (url: string | undefined, fallback: number) => Number(url ? new URL(url).port || fallback : fallback);
  return new Map([
    [port(process.env.TEST_DATABASE_URL, 5432), "PostgreSQL"],
    [port(process.env.TEST_REDIS_URL, 6379), "Redis"],
  ]);
}

function refuse(what: string, list: string): never {
  throw new Error(
    `A unit test ${what}. Unit tests start no process and reach no service: list this file in ${list} of test/projects.ts.`,
  );
}

const guarded = Symbol.for("chat-gateway.unit-guard");
const scope = globalThis as { [guarded]?: true };
if (!scope[guarded]) {
  scope[guarded] = true;
  for (const name of ["spawn", "spawnSync", "fork", "exec", "execSync", "execFile", "execFileSync"]) {
    childProcess[name] = (command: unknown) =>
      refuse(`started a child process (${name} ${String(command)})`, "PROCESS");
  }
  // `import { spawn } from "node:child_process"` reads the replaced functions from here on.
  syncBuiltinESMExports();
  const ports = servicePorts();
  const connect = net.Socket.prototype.connect as (...args: unknown[]) => unknown;
  net.Socket.prototype.connect = function (this: unknown, ...args: unknown[]) {
    const first = args[0] as { port?: unknown } | number | string | unknown[];
    const options = Array.isArray(first) ? (first[0] as { port?: unknown }) : first;
    const port = Number(typeof options === "object" && options !== null ? options.port : options);
    const service = ports.get(port);
    if (service) refuse(`connected to ${service} (port ${port})`, "INTEGRATION");
    return connect.apply(this, args);
  } as typeof net.Socket.prototype.connect;
}
