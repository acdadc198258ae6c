// `chat-gateway acp`: the ACP bridge of docs/PROTOCOL.md §20.1 (being built).
/** Runs the ACP bridge with `argv` (after `acp`); resolves the exit code. */
export async function runAcpCli(_argv: string[]): Promise<number> {
  process.stderr.write("chat-gateway acp: not built yet\n");
  return 2;
}
