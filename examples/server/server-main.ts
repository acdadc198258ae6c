// `npm start`: the example server. `user ...`, `device ...` and `key ...` run the user CLI instead;
// `hook ...` and `schedule ...` talk to the running server.
import { runUserCli } from "chat-gateway/cli";
import { HELP, parseConfig, UsageError, type ServerConfig } from "./config.js";
import { serverData } from "./data.js";
import { runHookCli } from "./hook-cli.js";
import { runningServer } from "./running-server.js";
import { runScheduleCli } from "./schedule-cli.js";
import { startServer } from "./server.js";

/** Runs the example server or its user, hook and schedule CLIs with `argv`; resolves the exit code. */
export async function runServerMain(argv: string[]): Promise<number> {
  if (argv[0] === "user" || argv[0] === "device" || argv[0] === "key") {
    // The same store the server reads: <data-dir>/users.json unless GATEWAY_USERS_FILE says otherwise.
    const config = parseConfig([], process.env);
    return runUserCli(argv, {
      defaultUsersFile: config.usersFile,
      data: () => serverData(config),
      // While the server runs, it adopts through the storage it holds (running-server.ts).
      server: () => runningServer(config.dataDir),
      stdin: process.stdin,
      stdout: process.stdout,
      stderr: process.stderr,
      isTTY: Boolean(process.stdin.isTTY),
      env: process.env,
    });
  }
  if (argv[0] === "hook") {
    // The running server does it: see admin-socket.ts.
    return runHookCli(argv.slice(1), parseConfig([], process.env).dataDir, {
      stdout: process.stdout,
      stderr: process.stderr,
    });
  }
  if (argv[0] === "schedule") {
    return runScheduleCli(argv.slice(1), parseConfig([], process.env).dataDir, {
      stdout: process.stdout,
      stderr: process.stderr,
    });
  }
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(HELP);
    return 0;
  }
  let config: ServerConfig;
  try {
    config = parseConfig(argv, process.env);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n\n${HELP}`);
      return 2;
    }
    throw error;
  }
  const server = await startServer(config);
  // SIGTERM drains (docs/PROTOCOL.md §18): running turns may finish, sockets close with 1012.
  let drain = false;
  const code = await new Promise<number>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      drain = signal === "SIGTERM";
      resolve(0);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    // Failing closed: a server whose storage is gone for good must not stay up answering errors.
    void server.failed.then((error) => {
      console.error(`${error.message}; stopping the server`);
      resolve(1);
    });
  });
  await server.close(drain ? { drainMs: config.drainMs } : undefined);
  return code;
}
