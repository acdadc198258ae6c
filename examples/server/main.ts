// The package's binary: `chat-gateway [acp|mcp|user|device|key|hook|schedule|--help|server flags]`.
// Each command loads only its own modules, so the bridges of docs/PROTOCOL.md §20 start within a
// second and never load the server.

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "acp") return (await import("./acp-cli.js")).runAcpCli(argv.slice(1));
  if (argv[0] === "mcp") return (await import("./mcp-cli.js")).runMcpCli(argv.slice(1));
  return (await import("./server-main.js")).runServerMain(argv);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
