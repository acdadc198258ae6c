// The user CLI on its own: `node --import tsx examples/server/user-cli.ts user add alice`.
import { runUserCli } from "chat-gateway/cli";
import { parseConfig } from "./config.js";
import { serverData } from "./data.js";
import { runningServer } from "./running-server.js";

// The first `user add` adopts the chats of the server's data (GATEWAY_DATA_DIR or DATABASE_URL),
// through the running server when one runs on it.
const config = parseConfig([], process.env);
const code = await runUserCli(process.argv.slice(2), {
  data: () => serverData(config),
  server: () => runningServer(config.dataDir),
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  isTTY: Boolean(process.stdin.isTTY),
  env: process.env,
});
// Exit now: a standard input that stays open after the password line must not keep us waiting.
process.exit(code);
