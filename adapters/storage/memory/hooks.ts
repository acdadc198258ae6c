/**
 * The {@link HookStore} of the memory storage (docs/PROTOCOL.md §17): hooks by id, and the
 * delivery keys (signatures against replays, idempotency keys) each hook has claimed.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { HookClaim, HookRecord, HookStore, OwnedHook } from "chat-gateway/storage";

interface HeldKey {
  expiresAt: number;
  messageId?: string;
}

/** The hook store over maps of this process, and the move of adoption. */
export function memoryHooks(): { members: HookStore; moveOwner(from: Owner, to: Owner): void } {
  const hooks = new Map<string, OwnedHook>();
  const keys = new Map<string, Map<string, HeldKey>>();

  function forget(hookId: string): void {
    hooks.delete(hookId);
    keys.delete(hookId);
  }

  const members: HookStore = {
    async putHook(owner: Owner, hook: HookRecord) {
      for (const [id, held] of hooks)
        if (held.owner === owner && held.hook.name === hook.name && id !== hook.hook_id) forget(id);
      hooks.set(hook.hook_id, { owner, hook: structuredClone(hook) });
    },
    async getHook(hookId: string) {
      const held = hooks.get(hookId);
      return held && structuredClone(held);
    },
    async listHooks(owner: Owner) {
      return [...hooks.values()].filter((h) => h.owner === owner).map((h) => structuredClone(h.hook));
    },
    async deleteHook(owner: Owner, hookId: string) {
      if (hooks.get(hookId)?.owner !== owner) return false;
      forget(hookId);
      return true;
    },
    async claimHookKey(hookId: string, key: string, expiresAt: number, now: number): Promise<HookClaim> {
      let held = keys.get(hookId);
      if (!held) {
        held = new Map();
        keys.set(hookId, held);
      }
      // Expired keys go on each claim, so the map stays as large as a day of posts.
      for (const [k, v] of held) if (v.expiresAt <= now) held.delete(k);
      const existing = held.get(key);
      if (existing)
        return existing.messageId === undefined
          ? { claimed: false }
          : { claimed: false, message_id: existing.messageId };
      held.set(key, { expiresAt });
      return { claimed: true };
    },
    async settleHookKey(hookId: string, key: string, messageId: string | null) {
      const held = keys.get(hookId)?.get(key);
      if (!held) return;
      if (messageId === null) keys.get(hookId)!.delete(key);
      else held.messageId = messageId;
    },
  };
  return {
    members,
    moveOwner(from, to) {
      for (const held of hooks.values()) if (held.owner === from) held.owner = to;
    },
  };
}
