// The user CLI on its own: `node --import tsx examples/server/user-cli.ts user add alice`.
import { runUserCli } from "chat-gateway/http";

const code = await runUserCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  isTTY: Boolean(process.stdin.isTTY),
  env: process.env,
});
// Exit now: a standard input that stays open after the password line must not keep us waiting.
process.exit(code);
