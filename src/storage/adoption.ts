/**
 * The errors a storage's `adoptOwner` refuses with: `defineStorage()` raises them from the
 * implementation's plain-data answer, so every storage words them the same.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import type { Owner } from "../protocol/ids.js";

/** Checks the two owners of `adoptOwner` before anything is read: an owner cannot adopt itself. */
export function checkAdoption(from: Owner, to: Owner): void {
  if (from === to) throw new GatewayError("unsupported", `${to} cannot adopt its own data`);
}

/** The `unsupported` error of `adoptOwner` into an owner that has data of its own. */
export function adoptionRefusedError(to: Owner): GatewayError {
  return new GatewayError(
    "unsupported",
    `${to} already has data of its own: adopting would mix two owners' chats and seqs, so nothing was moved`,
  );
}
