// `hook add|list|rotate|remove` (docs/PROTOCOL.md §17): asks the running server over its admin
// socket, so it works while the server holds the data folder. Exit 0 done, 1 refused, 2 usage.
import net from "node:net";
import { terminalText } from "chat-gateway/cli";
import type { HookInfo, NewHook } from "chat-gateway/hooks";
import { adminSocketPath, type AdminRequest } from "./admin-socket.js";

export const HOOK_USAGE = `usage: hook add NAME --channel CHANNEL [--mode post|turn] [--user NAME]
       hook list [--user NAME]
       hook rotate NAME [--user NAME]
       hook remove NAME [--user NAME]
`;

export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/**
 * Splits arguments into positional ones and `--name value` flags of `allowed` (the last of a
 * repeated one wins); undefined on any other `--` argument or a flag without its value.
 */
export function splitArgs(
  args: string[],
  allowed: readonly string[],
): { positional: string[]; flags: Record<string, string> } | undefined {
  const flags: Record<string, string> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) positional.push(arg);
    else if (allowed.includes(arg.slice(2)) && args[i + 1] !== undefined) flags[arg.slice(2)] = args[++i]!;
    else return undefined;
  }
  return { positional, flags };
}

/** Parses `argv` (after "hook") into a request, or undefined on a usage error. */
function parse(argv: string[]): AdminRequest | undefined {
  const [action, ...rest] = argv;
  const split = splitArgs(rest, ["channel", "mode", "user"]);
  if (!split) return undefined;
  const { positional, flags } = split;
  const user = flags.user;
  if (action === "list" && positional.length === 0 && !flags.channel && !flags.mode) return { action, user };
  if ((action === "rotate" || action === "remove") && positional.length === 1 && !flags.channel && !flags.mode)
    return { action, user, name: positional[0] };
  if (
    action === "add" &&
    positional.length === 1 &&
    flags.channel &&
    (flags.mode === undefined || flags.mode === "post" || flags.mode === "turn")
  ) {
    return { action, user, name: positional[0], channel: flags.channel, mode: flags.mode as AdminRequest["mode"] };
  }
  return undefined;
}

/** One request to the admin socket at `path` and its reply; rejects when nothing answers there. */
export function askAdmin(
  path: string,
  request: AdminRequest,
): Promise<{ ok: boolean; result?: unknown; error?: string; usage?: true }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(path);
    let reply = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on("data", (chunk: string) => (reply += chunk));
    socket.on("end", () => {
      try {
        resolve(JSON.parse(reply));
      } catch {
        reject(new Error("the server's admin socket answered nothing"));
      }
    });
    socket.on("error", reject);
  });
}

/**
 * Asks the running server over its admin socket: its result, or the exit code after saying on
 * stderr why not (1 unreachable or refused, 2 a usage error the server found).
 */
export async function askServer(dataDir: string, request: AdminRequest, io: Io): Promise<{ result: unknown } | number> {
  let reply: Awaited<ReturnType<typeof askAdmin>>;
  try {
    reply = await askAdmin(adminSocketPath(dataDir), request);
  } catch (error) {
    io.stderr.write(
      `${terminalText(`cannot reach the running server through ${adminSocketPath(dataDir)} (${(error as Error).message}); start the server first`)}\n`,
    );
    return 1;
  }
  if (!reply.ok) {
    io.stderr.write(`${terminalText(String(reply.error))}\n`);
    return reply.usage ? 2 : 1;
  }
  return { result: reply.result };
}

/** Runs `hook ...` against the server whose data folder is `dataDir`. */
export async function runHookCli(argv: string[], dataDir: string, io: Io): Promise<number> {
  const request = parse(argv);
  if (!request) {
    io.stderr.write(HOOK_USAGE);
    return 2;
  }
  const reply = await askServer(dataDir, request, io);
  if (typeof reply === "number") return reply;
  if (request.action === "add" || request.action === "rotate") {
    const { hook, secret } = reply.result as NewHook;
    io.stdout.write(`hook_id: ${terminalText(hook.hook_id)}\nsecret: ${terminalText(secret)}\n`);
  } else if (request.action === "list") {
    // A channel may have been named by a device; every field is the server's to say.
    for (const h of reply.result as HookInfo[])
      io.stdout.write(`${[h.name, h.channel, h.mode, h.hook_id].map(terminalText).join("\t")}\n`);
  }
  return 0;
}
