/**
 * Webhooks into automation channels (docs/PROTOCOL.md §17): {@link createHookHandler} takes signed
 * posts at `POST /api/hooks/{hook_id}`, {@link signHookBody} and {@link verifyHookSignature} make and check
 * their signatures, {@link addHook}, {@link rotateHook}, {@link removeHook} and {@link listHooks}
 * manage an owner's hooks, and a {@link HookPostBudget} bounds each hook's posts (in memory here,
 * on Redis in `chat-gateway/redis`).
 * @module
 */
export { createHookHandler, HOOK_LIMITS } from "../http/hook-route.js";
export type { HookHandler, HookHandlerOptions } from "../http/hook-route.js";
export {
  signHookBody,
  verifyHookSignature,
  parseHookSignature,
  HOOK_TOLERANCE_SECONDS,
} from "../http/hook-signature.js";
export type { HookSignature } from "../http/hook-signature.js";
export { addHook, rotateHook, removeHook, listHooks } from "../http/hook-admin.js";
export type { HookInfo, NewHook } from "../http/hook-admin.js";
export { memoryHookBudget, type HookPostBudget } from "../http/hook-budget.js";
