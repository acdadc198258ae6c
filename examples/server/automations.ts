// GET /api/automations (docs/PROTOCOL.md §17, an extension of the example server): the signed-in
// owner's hooks (name, channel, mode; never a secret) and schedules (cron, time zone, next run,
// latest run), which the web UI shows read-only in automation channels. Behind the login gate
// like every /api/ route; hooks and schedules are managed with the CLI only.
import type { IncomingMessage, ServerResponse } from "node:http";
import { ANONYMOUS_OWNER, type Gateway } from "chat-gateway";
import { listHooks } from "chat-gateway/hooks";
import type { LoginProtection } from "chat-gateway/login";

/** Answers GET /api/automations; false for any other path. */
export async function serveAutomations(
  gateway: Gateway,
  protection: LoginProtection,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  if ((req.url ?? "").split("?")[0] !== "/api/automations") return false;
  const headers = { "content-type": "application/json", "cache-control": "no-store" };
  if (req.method !== "GET") {
    res.writeHead(405, { ...headers, allow: "GET" }).end(JSON.stringify({ error: "use GET" }));
    return true;
  }
  const owner = (await protection.enabled()) ? protection.userOf(req) : ANONYMOUS_OWNER;
  if (owner === undefined || owner === null) {
    res.writeHead(401, headers).end(JSON.stringify({ error: "login required" }));
    return true;
  }
  const [hooks, schedules] = await Promise.all([listHooks(gateway, owner), gateway.schedules.list(owner)]);
  const body = {
    hooks: hooks.map((h) => ({ name: h.name, chat_id: h.chat_id, mode: h.mode })),
    schedules: schedules.map((s) => ({
      name: s.name,
      chat_id: s.chat_id,
      cron: s.cron,
      tz: s.tz,
      next_run: s.next_run,
      last_run: s.last_run ?? null,
    })),
  };
  res.writeHead(200, headers).end(JSON.stringify(body));
  return true;
}
