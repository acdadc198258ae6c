// `chat-gateway mcp`: the MCP bridge of docs/PROTOCOL.md §20.2 on stdin/stdout. It dials the
// gateway's WebSocket as a device and loads nothing of the server, so it starts fast. Stdout
// carries only MCP messages; everything a person should read goes to stderr, on one line.
import { createHash } from "node:crypto";
import { createGatewayClient, type GatewayClient, memoryCursorStore } from "chat-gateway/client";

const HELP = `Usage: chat-gateway mcp [--url URL] [--token TOKEN]

An MCP server on stdin/stdout for a running chat-gateway (docs/PROTOCOL.md §20.2).
  --url URL      the gateway, http(s):// or ws(s):// (default $GATEWAY_URL)
  --token TOKEN  a device token or API key (default $GATEWAY_TOKEN)
  --help         this text
`;

/** How long the first connection may take before the bridge gives up, ms. */
const CONNECT_TIMEOUT_MS = 10_000;

interface McpArgs {
  url: string;
  token: string;
}

/** The arguments, or a line saying what is wrong with them. */
function parseArgs(argv: string[]): McpArgs | string {
  let url = process.env.GATEWAY_URL ?? "";
  let token = process.env.GATEWAY_TOKEN ?? "";
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [name, inline] = arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg];
    const value = inline ?? argv[++i];
    if (name === "--url" && value !== undefined) url = value;
    else if (name === "--token" && value !== undefined) token = value;
    else return `unknown or incomplete argument ${arg} (see --help)`;
  }
  if (!url) return "no gateway URL: pass --url or set GATEWAY_URL";
  if (!token) return "no token: pass --token or set GATEWAY_TOKEN (a device token or API key)";
  return { url, token };
}

/** The WebSocket URL of a gateway named by its page or its socket. */
export function socketUrl(raw: string): string {
  const url = new URL(raw);
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  else if (url.protocol !== "ws:" && url.protocol !== "wss:") throw new Error(`not an http(s) or ws(s) URL: ${raw}`);
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/ws/gateway";
  return url.href;
}

/** Connects, or rejects with a one-line reason at the first refusal or failed attempt. */
async function connect(client: GatewayClient, url: string): Promise<void> {
  let onState: (state: string, info: { reason?: string }) => void = () => undefined;
  let timer: NodeJS.Timeout | undefined;
  const failed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from ${url}`)), CONNECT_TIMEOUT_MS);
    onState = (state, info) => {
      if (state === "reconnecting") reject(new Error(`cannot reach ${url}: ${info.reason ?? "connection failed"}`));
    };
    client.on("state", onState);
  });
  try {
    await Promise.race([client.connect(), failed]);
  } catch (error) {
    const { code, message } = error as Error & { code?: string };
    throw new Error(code === "auth" ? `the gateway refused the token (${message})` : message);
  } finally {
    clearTimeout(timer);
    client.off("state", onState);
  }
}

/** Runs the MCP bridge with `argv` (after `mcp`); resolves the exit code. */
export async function runMcpCli(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stderr.write(HELP);
    return 0;
  }
  const args = parseArgs(argv);
  if (typeof args === "string") {
    process.stderr.write(`chat-gateway mcp: ${args}\n`);
    return 2;
  }
  let url: string;
  try {
    url = socketUrl(args.url);
  } catch (error) {
    process.stderr.write(`chat-gateway mcp: ${(error as Error).message}\n`);
    return 2;
  }
  const client = createGatewayClient({
    url,
    token: args.token,
    headers: { authorization: `Bearer ${args.token}` },
    // Not the /mcp door's id for the same token ("mcp-…"): both may be connected at once.
    deviceId: `mcp-stdio-${createHash("sha256").update(args.token).digest("hex").slice(0, 16)}`,
    deviceName: "mcp",
    media: false,
    // From the start of the outbox, so the asks raised before the bridge started are known.
    cursorStore: memoryCursorStore(0),
  });
  // The MCP modules load while the gateway answers the hello.
  const modules = Promise.all([import("chat-gateway/mcp"), import("@modelcontextprotocol/server/stdio")]);
  try {
    await connect(client, url);
  } catch (error) {
    client.close();
    process.stderr.write(`chat-gateway mcp: ${(error as Error).message}\n`);
    return 1;
  }
  return serve(client, await modules);
}

/** Serves MCP on stdio until stdin closes; then the client closes and the exit code is 0. */
async function serve(
  client: GatewayClient,
  [{ clientLink, createMcpServer }, { serveStdio }]: [
    typeof import("chat-gateway/mcp"),
    typeof import("@modelcontextprotocol/server/stdio"),
  ],
): Promise<number> {
  client.on("unauthorized", (reason) => process.stderr.write(`chat-gateway mcp: signed out: ${reason}\n`));
  const link = clientLink(client);
  const ended = new Promise<void>((resolve) => {
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
  });
  const handle = serveStdio(() => createMcpServer(link), {
    onerror: (error) => process.stderr.write(`chat-gateway mcp: ${error.message}\n`),
  });
  await ended;
  await handle.close();
  client.close();
  return 0;
}
