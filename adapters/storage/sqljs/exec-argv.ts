/**
 * Node flags for sql.js's own processes (database and snapshot), from the environment variable
 * `CHAT_GATEWAY_SQLJS_EXEC_ARGV` (separated by white space; none by default). The parent's own flags (a
 * loader, an inspector port) are never passed on. `--liftoff-only` starts a process in about a
 * third of the CPU time (WebAssembly is not recompiled by the optimizing tier), at the price of
 * slower queries: for short-lived storages, such as a test suite's.
 */
export function sqlJsExecArgv(): string[] {
  return process.env.CHAT_GATEWAY_SQLJS_EXEC_ARGV?.split(/\s+/).filter((flag) => flag !== "") ?? [];
}
