// Pairing a new device (docs/PROTOCOL.md §16): the QR code in Settings carries `/?pair=<code>`;
// opening it here redeems the code, whose answer signs this browser in without a password.
import { redeemPairingCode } from "./api.js";

/**
 * Redeems the `pair` code of the address bar, if any, and takes it off the address (a code is
 * good once; a reload must not spend the next attempt on it). Resolves with what went wrong, for
 * the sign-in screen, or undefined.
 */
export async function redeemFromUrl(): Promise<string | undefined> {
  const params = new URLSearchParams(location.search);
  const code = params.get("pair");
  if (code === null) return undefined;
  params.delete("pair");
  history.replaceState(null, "", `${location.pathname}${params.size ? `?${params}` : ""}${location.hash}`);
  try {
    await redeemPairingCode(code, `Web (${navigator.platform || "browser"})`);
    return undefined;
  } catch (error) {
    return `Pairing failed: ${(error as Error).message}. Ask for a new code, or sign in.`;
  }
}
