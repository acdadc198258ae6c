// `chat-gateway mcp`: the MCP bridge of docs/PROTOCOL.md §20.2 (being built).
/** Runs the MCP bridge with `argv` (after `mcp`); resolves the exit code. */
export async function runMcpCli(_argv: string[]): Promise<number> {
  process.stderr.write("chat-gateway mcp: not built yet\n");
  return 2;
}
