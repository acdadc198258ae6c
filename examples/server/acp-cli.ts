// `chat-gateway acp`: the ACP bridge of docs/PROTOCOL.md §20.1, for editors that run agents over
// stdio (Zed, JetBrains IDEs, Neovim, Emacs). stdout carries JSON-RPC only; everything a person
// should read goes to stderr, one line each.
import { parseArgs } from "node:util";

const HELP = `Usage: chat-gateway acp [--url URL] [--token TOKEN] [--channel NAME]

An Agent Client Protocol agent on stdin/stdout that reaches the agent behind a running
chat-gateway as one more device of your account (docs/PROTOCOL.md §20.1).

  --url URL        the gateway's WebSocket (env GATEWAY_URL), e.g. wss://chat.example.com/ws/gateway;
                   an http(s) origin is taken to mean its /ws/gateway
  --token TOKEN    a device token or API key (env GATEWAY_TOKEN)
  --channel NAME   the channel new sessions open threads in (default: your default channel)
  --help           this text
`;

/** `http(s)://host` → `ws(s)://host/ws/gateway`; a ws URL is kept as it is. */
export function gatewaySocketUrl(raw: string): string {
  const url = new URL(raw);
  if (url.protocol === "http:" || url.protocol === "https:") {
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (url.pathname === "/" || url.pathname === "") url.pathname = "/ws/gateway";
  }
  if (url.protocol !== "ws:" && url.protocol !== "wss:") throw new Error(`not a ws:// or http:// URL: ${raw}`);
  return url.href;
}

/** Runs the ACP bridge with `argv` (after `acp`); resolves the exit code. */
export async function runAcpCli(argv: string[]): Promise<number> {
  const fail = (message: string) => {
    process.stderr.write(`chat-gateway acp: ${message}\n`);
    return 1;
  };
  // Whatever a dependency logs must not corrupt the JSON-RPC stream.
  console.log = console.info = console.debug = console.error;
  let values: { url?: string; token?: string; channel?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        url: { type: "string" },
        token: { type: "string" },
        channel: { type: "string" },
        help: { type: "boolean" },
      },
    }));
  } catch (error) {
    return fail((error as Error).message.split("\n")[0]!);
  }
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const rawUrl = values.url ?? process.env.GATEWAY_URL;
  const token = values.token ?? process.env.GATEWAY_TOKEN ?? "";
  if (!rawUrl) return fail("say where the gateway is: --url or GATEWAY_URL (see --help)");
  try {
    const { serveAcp } = await import("chat-gateway/acp");
    await serveAcp({
      url: gatewaySocketUrl(rawUrl),
      token,
      channel: values.channel,
      input: process.stdin,
      output: process.stdout,
      log: (line) => process.stderr.write(`chat-gateway acp: ${line}\n`),
    });
    return 0;
  } catch (error) {
    return fail(error instanceof Error ? error.message.split("\n")[0]! : String(error));
  }
}
