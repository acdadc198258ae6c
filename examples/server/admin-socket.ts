// The running server's admin socket (<data-dir>/admin.sock, mode 0600): how `hook ...`,
// `schedule ...` and the first `user add` (its adoption) reach a server that holds the data
// folder (sql.js keeps it to one process), docs/PROTOCOL.md §17 and §10.4.
// One JSON line in (at most 64 KiB, within 10 s), one JSON line out; only the account that runs
// the server can connect.
import { chmod, rm } from "node:fs/promises";
import net from "node:net";
import { join } from "node:path";
import { ANONYMOUS_OWNER, type Gateway } from "chat-gateway";
import type { HookMode } from "chat-gateway/storage";
import { isGatewayError } from "chat-gateway/protocol";
import { addHook, listHooks, removeHook, rotateHook } from "chat-gateway/hooks";
import { checkUsername, UserStoreError, type LoginProtection } from "chat-gateway/login";
import { planAdoption } from "chat-gateway/cli";
import { readRequestLine } from "./admin-line.js";

/**
 * What the CLI asks: a hook action (the default kind) or a schedule action, for a user when login
 * is on, or, while login is off, the plan or the move of the first user's adoption (`name` the user).
 */
export interface AdminRequest {
  kind?: "hook" | "schedule" | "adopt";
  action: "add" | "list" | "rotate" | "remove" | "run" | "plan";
  user?: string;
  name?: string;
  channel?: string;
  mode?: HookMode;
  cron?: string;
  tz?: string;
  prompt?: string;
}

type AdminReply = { ok: true; result: unknown } | { ok: false; error: string; usage?: true };

/** The socket's path in a data folder. */
export function adminSocketPath(dataDir: string): string {
  return join(dataDir, "admin.sock");
}

/** Listens on the admin socket; resolves with its close. */
export async function startAdminSocket(
  gateway: Gateway,
  protection: LoginProtection,
  dataDir: string,
): Promise<() => Promise<void>> {
  const path = adminSocketPath(dataDir);
  // A socket file left by a server that died; the data folder's lock says no other server runs.
  await rm(path, { force: true });
  const server = net.createServer((socket) => {
    socket.on("error", () => undefined);
    void readRequestLine(socket).then(async (line) => {
      if (line === undefined) return;
      const reply = await answer(gateway, protection, line);
      socket.end(`${JSON.stringify(reply)}\n`, () => socket.destroy());
    });
  });
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => resolve());
    });
  } finally {
    process.umask(previous);
  }
  await chmod(path, 0o600);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

async function answer(gateway: Gateway, protection: LoginProtection, line: string): Promise<AdminReply> {
  try {
    const request = JSON.parse(line) as AdminRequest;
    if (request.kind === "adopt") return await oneAdoptionAtATime(() => adoption(gateway, protection, request));
    const owner = await ownerOf(protection, request.user);
    if (typeof owner !== "string") return owner;
    if (request.kind === "schedule") return await scheduleAction(gateway, owner, request);
    switch (request.action) {
      case "add":
        return {
          ok: true,
          result: await addHook(gateway, owner, { name: request.name!, channel: request.channel!, mode: request.mode }),
        };
      case "rotate":
        return { ok: true, result: await rotateHook(gateway, owner, request.name!) };
      case "remove":
        await removeHook(gateway, owner, request.name!);
        return { ok: true, result: null };
      case "list":
        return { ok: true, result: await listHooks(gateway, owner) };
      default:
        return { ok: false, error: "unknown action", usage: true };
    }
  } catch (error) {
    return { ok: false, error: isGatewayError(error) ? error.message : "the server could not do it (see its log)" };
  }
}

/** The adoption in progress: two `user add`s at once must not both copy the media before either moves. */
let adopting: Promise<unknown> = Promise.resolve();

function oneAdoptionAtATime<T>(work: () => Promise<T>): Promise<T> {
  const next = adopting.then(work, work);
  adopting = next.catch(() => undefined);
  return next;
}

/**
 * The first `user add` while this server runs (docs/PROTOCOL.md §10.4): what would move to the new
 * user, or the move, through the storage and media store this server has open. Only while login
 * is off: once a user exists, the anonymous chats are no first user's to take.
 */
async function adoption(gateway: Gateway, protection: LoginProtection, request: AdminRequest): Promise<AdminReply> {
  if (await protection.enabled()) return { ok: false, error: "login is on already: only the first user adopts" };
  try {
    const name = typeof request.name === "string" ? request.name : "";
    checkUsername(name);
    const { storage, mediaStore } = gateway.options;
    const planned = await planAdoption({ storage, mediaStore }, name);
    if (request.action === "plan") return { ok: true, result: planned?.plan ?? null };
    if (request.action !== "run") return { ok: false, error: "unknown action", usage: true };
    // Planned again just now: a second `user add` at the same time finds nothing left.
    return { ok: true, result: planned ? await planned.run() : null };
  } catch (error) {
    const told = error instanceof UserStoreError || isGatewayError(error);
    return { ok: false, error: told ? (error as Error).message : "the server could not do it (see its log)" };
  }
}

/** `schedule add|list|remove|run` (docs/PROTOCOL.md §17). */
async function scheduleAction(gateway: Gateway, owner: string, request: AdminRequest): Promise<AdminReply> {
  switch (request.action) {
    case "add":
      return {
        ok: true,
        result: await gateway.schedules.add(owner, {
          name: request.name!,
          cron: request.cron!,
          tz: request.tz,
          prompt: request.prompt!,
          channel: request.channel!,
        }),
      };
    case "list": {
      const names = new Map((await gateway.channels.list(owner)).map((c) => [c.chat_id, c.name]));
      return {
        ok: true,
        result: (await gateway.schedules.list(owner)).map((s) => ({
          ...s,
          channel: names.get(s.chat_id) ?? "(deleted)",
        })),
      };
    }
    case "remove":
      await gateway.schedules.remove(owner, request.name!);
      return { ok: true, result: null };
    case "run":
      return { ok: true, result: await gateway.schedules.run(owner, request.name!) };
    default:
      return { ok: false, error: "unknown action", usage: true };
  }
}

/** The owner the hooks belong to: the named user when login is on, the anonymous owner when off. */
async function ownerOf(
  protection: LoginProtection,
  user: string | undefined,
): Promise<string | { ok: false; error: string; usage?: true }> {
  if (!(await protection.enabled()))
    return user === undefined
      ? ANONYMOUS_OWNER
      : {
          ok: false,
          error: "login is off: hooks and schedules belong to the anonymous owner; leave out --user",
          usage: true,
        };
  if (user === undefined) return { ok: false, error: "login is on: name the user with --user NAME", usage: true };
  if (!(await protection.users.load()).users.has(user)) return { ok: false, error: `no user named "${user}"` };
  return user;
}
