// Pairing a new device (docs/PROTOCOL.md §16): the QR code in Settings carries `/?pair=<code>`.
// Opening it asks the person first, naming the account it joins and the one it signs out of, and
// redeems only on their yes: a link someone else sent must not silently make this browser theirs.
import { lookupPairingCode, redeemPairingCode } from "./api.js";
import { confirmDialog } from "./dialog.js";

/** What became of the `pair` code of the address bar; `failed` is for the person to read. */
export interface PairingOutcome {
  failed?: string;
}

/** Takes `pair` off the address once answered: a reload must not ask again about a spent or refused code. */
function dropCode(params: URLSearchParams): void {
  params.delete("pair");
  history.replaceState(null, "", `${location.pathname}${params.size ? `?${params}` : ""}${location.hash}`);
}

/** The question, naming the account joined and, when it is another, the one signed out of. */
function askToJoin(joining: string, current: string | null): Promise<boolean> {
  const text = [
    `This link signs this browser in as ${joining}, as one of ${joining}'s paired devices, with no password. What you write here then goes to ${joining}'s account.`,
  ];
  if (current !== null && current !== joining)
    text.push(`You are signed in as ${current}: joining signs you out of ${current} on this browser.`);
  text.push("Join only if you asked for this link yourself.");
  return confirmDialog(`Join ${joining} on this browser?`, text, `Join ${joining}`, {
    cancel: "Not now",
    danger: false,
  });
}

/**
 * Asks whether to redeem the `pair` code of the address bar, if any, and redeems it on yes.
 * `current` is the user this browser is signed in as (null: none). Resolves undefined when the
 * address carries no code.
 */
export async function pairFromUrl(current: string | null): Promise<PairingOutcome | undefined> {
  const params = new URLSearchParams(location.search);
  const code = params.get("pair");
  if (code === null) return undefined;
  try {
    const { username } = await lookupPairingCode(code);
    const yes = await askToJoin(username, current);
    dropCode(params);
    if (!yes) return {};
    await redeemPairingCode(code, `Web (${navigator.platform || "browser"})`, current !== null && current !== username);
    return {};
  } catch (error) {
    dropCode(params);
    return { failed: `Pairing failed: ${(error as Error).message}. Ask for a new code.` };
  }
}
