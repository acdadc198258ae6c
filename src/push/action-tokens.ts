/**
 * Action tokens (docs/PROTOCOL.md §21): the credential of one button of an ask's push. Each is
 * 256 random bits, stored only as its SHA-256 hash, bound to (owner, ask, option, push target),
 * and used once; `POST /api/asks/{picker_id}/act` redeems it ({@link redeemActionToken}).
 * @module
 */
import { createHash, randomBytes } from "node:crypto";
import type { ActionTokenRecord, ActionTokenStore } from "../contracts/action-tokens.js";
import type { PushAction } from "../contracts/push.js";
import type { Owner } from "../protocol/ids.js";

/** The most buttons a push carries: what ntfy and FCM show. */
export const MAX_PUSH_ACTIONS = 3;

/** What an ask offers for buttons: up to three of its options, until it expires. */
export interface AskOffer {
  options: ReadonlyArray<{ id: string; label: string }>;
  /** The ask's `expires_at`, epoch ms: its tokens stop working then at the latest. */
  expires_at: number;
}

/** The SHA-256 of a token, lower-case hex: the only form in which it is stored or compared. */
export function actionTokenHash(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** A token as pushed: 32 random bytes, base64url (43 characters). */
export function isActionTokenShape(value: unknown): value is string {
  return typeof value === "string" && /^[A-Za-z0-9_-]{43}$/.test(value);
}

/** The path an ask's buttons post to (docs/PROTOCOL.md §21). */
export function actPath(pickerId: string): string {
  return `/api/asks/${encodeURIComponent(pickerId)}/act`;
}

/**
 * Mint the buttons of one ask's push to one target: a token per offered option (the first
 * {@link MAX_PUSH_ACTIONS}), stored as hashes before the push goes out, posting to
 * `<base>/api/asks/{picker_id}/act` (the path alone when no public URL is known).
 */
export async function mintActions(
  store: ActionTokenStore,
  bound: { owner: Owner; picker_id: string; device_id: string; target: string; base: string | undefined },
  offer: AskOffer,
): Promise<PushAction[]> {
  const url = `${bound.base ?? ""}${actPath(bound.picker_id)}`;
  const minted = offer.options.slice(0, MAX_PUSH_ACTIONS).map((option) => {
    const token = randomBytes(32).toString("base64url");
    const record: ActionTokenRecord = {
      hash: actionTokenHash(token),
      owner: bound.owner,
      picker_id: bound.picker_id,
      option_id: option.id,
      device_id: bound.device_id,
      target: bound.target,
      expires_at: offer.expires_at,
    };
    return { record, action: { option_id: option.id, title: option.label, token, url } };
  });
  await store.putActionTokens(minted.map((m) => m.record));
  return minted.map((m) => m.action);
}
