/**
 * Managing an owner's webhooks (docs/PROTOCOL.md §17): what the example server's `hook` commands
 * and an embedder's own admin call.
 * @module
 */
import { randomBytes } from "node:crypto";
import type { Gateway, Owner } from "chat-gateway";
import type { HookMode, HookRecord, HookStore } from "chat-gateway/storage";
import { GatewayError } from "chat-gateway/protocol";

/** A hook as listed: everything but its secret, which is shown once only. */
export type HookInfo = Omit<HookRecord, "secret"> & { channel: string };

/** What {@link addHook} and {@link rotateHook} answer: the hook and, this once, its secret. */
export interface NewHook {
  hook: HookInfo;
  secret: string;
}

/** 192 random bits, lower-case hex (paths are matched case-insensitively). */
function newHookId(): string {
  return `hk_${randomBytes(24).toString("hex")}`;
}

/** 256 random bits. */
function newSecret(): string {
  return `whsec_${randomBytes(32).toString("hex")}`;
}

/** The gateway's `hookStore`; without one no hook can be kept. */
function hookStore(gateway: Gateway): HookStore {
  const store = gateway.options.hookStore;
  if (!store)
    throw new GatewayError(
      "unsupported",
      "this gateway keeps no webhooks: give createGateway a hookStore (the built-in storages are one)",
    );
  return store;
}

function checkName(name: unknown): string {
  if (typeof name !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(name))
    throw new GatewayError("unsupported", "a hook name is 1 to 64 letters, digits, '.', '_' or '-'");
  return name;
}

/** The owner's automation channel of that name, created as one when the owner has none. */
async function automationChannel(
  gateway: Gateway,
  owner: Owner,
  name: string,
): Promise<{ chat_id: string; name: string }> {
  const channels = await gateway.channels.list(owner);
  const found = channels.find((c) => c.name === name.trim() && c.kind === "channel");
  if (found) {
    if (!found.automation)
      throw new GatewayError(
        "unsupported",
        `channel "${name}" is not an automation channel: hooks post into automation channels only`,
      );
    return found;
  }
  return gateway.channels.create(owner, { name, kind: "channel", automation: true });
}

/**
 * Adds a hook posting into the owner's automation channel `channel` (created when missing); a
 * hook of the same name is replaced. The secret is in the answer and nowhere else readable.
 * @throws {GatewayError} `unsupported` on a bad name or mode, or a gateway without a `hookStore`
 */
export async function addHook(
  gateway: Gateway,
  owner: Owner,
  input: { name: string; channel: string; mode?: HookMode },
): Promise<NewHook> {
  // Refused before the channel is made: without a store nothing may change.
  const store = hookStore(gateway);
  const name = checkName(input.name);
  const mode = input.mode ?? "post";
  if (mode !== "post" && mode !== "turn") throw new GatewayError("unsupported", `mode must be "post" or "turn"`);
  const channel = await automationChannel(gateway, owner, input.channel);
  const hook: HookRecord = {
    hook_id: newHookId(),
    name,
    chat_id: channel.chat_id,
    mode,
    secret: newSecret(),
    created_at: Date.now(),
  };
  await store.putHook(owner, hook);
  return { hook: info(hook, channel.name), secret: hook.secret };
}

/**
 * Gives the hook a new id and secret; the old ones stop working at once.
 * @throws {GatewayError} `not_found` when the owner has no hook of that name
 */
export async function rotateHook(gateway: Gateway, owner: Owner, name: string): Promise<NewHook> {
  const old = await findHook(gateway, owner, name);
  const hook: HookRecord = { ...old, hook_id: newHookId(), secret: newSecret(), created_at: Date.now() };
  await hookStore(gateway).putHook(owner, hook);
  return { hook: info(hook, await channelName(gateway, owner, hook.chat_id)), secret: hook.secret };
}

/**
 * Removes a hook; posts to it answer 404 from then on.
 * @throws {GatewayError} `not_found` when the owner has no hook of that name
 */
export async function removeHook(gateway: Gateway, owner: Owner, name: string): Promise<void> {
  const hook = await findHook(gateway, owner, name);
  await hookStore(gateway).deleteHook(owner, hook.hook_id);
}

/** The owner's hooks by name, without their secrets. */
export async function listHooks(gateway: Gateway, owner: Owner): Promise<HookInfo[]> {
  const hooks = await (gateway.options.hookStore?.listHooks(owner) ?? []);
  const names = new Map((await gateway.channels.list(owner)).map((c) => [c.chat_id, c.name]));
  return hooks
    .map((h) => info(h, names.get(h.chat_id) ?? "(deleted)"))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

async function findHook(gateway: Gateway, owner: Owner, name: string): Promise<HookRecord> {
  const hook = (await (gateway.options.hookStore?.listHooks(owner) ?? [])).find((h) => h.name === name);
  if (!hook) throw new GatewayError("not_found", `no hook named "${name}"`);
  return hook;
}

async function channelName(gateway: Gateway, owner: Owner, chatId: string): Promise<string> {
  return (await gateway.channels.list(owner)).find((c) => c.chat_id === chatId)?.name ?? "(deleted)";
}

function info(hook: HookRecord, channel: string): HookInfo {
  const { secret: _secret, ...rest } = hook;
  return { ...rest, channel };
}
