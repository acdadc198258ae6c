// `schedule add|list|remove|run` (docs/PROTOCOL.md §17): asks the running server over its admin
// socket, like `hook ...`. Exit 0 done, 1 refused, 2 usage.
import type { ScheduleInfo } from "chat-gateway";
import type { ScheduleRun } from "chat-gateway/storage";
import { terminalText } from "chat-gateway/cli";
import type { AdminRequest } from "./admin-socket.js";
import { askServer, splitArgs, type Io } from "./hook-cli.js";

export const SCHEDULE_USAGE = `usage: schedule add NAME --cron EXPR [--tz ZONE] --channel CHANNEL --prompt TEXT [--user NAME]
       schedule list [--user NAME]
       schedule remove NAME [--user NAME]
       schedule run NAME [--user NAME]
`;

/** Parses `argv` (after "schedule") into a request, or undefined on a usage error. */
function parse(argv: string[]): AdminRequest | undefined {
  const [action, ...rest] = argv;
  const split = splitArgs(rest, ["cron", "tz", "channel", "prompt", "user"]);
  if (!split) return undefined;
  const { positional, flags } = split;
  const { user, ...given } = flags;
  const base = { kind: "schedule" as const, user };
  if (action === "add" && positional.length === 1 && given.cron && given.channel && given.prompt !== undefined) {
    return {
      ...base,
      action,
      name: positional[0],
      cron: given.cron,
      tz: given.tz,
      channel: given.channel,
      prompt: given.prompt,
    };
  }
  if (Object.keys(given).length > 0) return undefined;
  if (action === "list" && positional.length === 0) return { ...base, action };
  if ((action === "remove" || action === "run") && positional.length === 1)
    return { ...base, action, name: positional[0] };
  return undefined;
}

function when(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? "-" : new Date(ms).toISOString();
}

/** The latest run in a few words: `never`, `running since …`, `ok at …`, `error at …: why`. */
function lastResult(run: ScheduleRun | undefined): string {
  if (!run) return "never";
  if (run.status === "running") return `running since ${when(run.at)}`;
  return run.status === "ok" ? `ok at ${when(run.at)}` : `error at ${when(run.at)}: ${run.error ?? ""}`;
}

/** Runs `schedule ...` against the server whose data folder is `dataDir`. */
export async function runScheduleCli(argv: string[], dataDir: string, io: Io): Promise<number> {
  const request = parse(argv);
  if (!request) {
    io.stderr.write(SCHEDULE_USAGE);
    return 2;
  }
  const reply = await askServer(dataDir, request, io);
  if (typeof reply === "number") return reply;
  if (request.action === "add") {
    const added = reply.result as ScheduleInfo;
    io.stdout.write(`schedule: ${terminalText(added.name)}\nnext_run: ${when(added.next_run)}\n`);
  } else if (request.action === "list") {
    // Tab-separated: name, channel, cron, time zone, next run, last result. A channel may have been
    // named by a device, and a run's error may quote the model server.
    for (const s of reply.result as Array<ScheduleInfo & { channel: string }>) {
      const fields = [s.name, s.channel, s.cron, s.tz, when(s.next_run), lastResult(s.last_run)];
      io.stdout.write(`${fields.map(terminalText).join("\t")}\n`);
    }
  } else if (request.action === "run") {
    io.stdout.write(`prompt_id: ${terminalText((reply.result as ScheduleRun).prompt_id)}\n`);
  }
  return 0;
}
