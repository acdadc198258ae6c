/**
 * Who a token or a request is signed in as, for login protection (docs/PROTOCOL.md §9): a login
 * session, a paired device's token (docs/PROTOCOL.md §16), or, for the doors and `hello` only, an
 * API key (docs/PROTOCOL.md §19.1).
 * @module
 */
import type { IncomingMessage } from "node:http";
import type { Revocation, Session, SessionStore } from "chat-gateway";
import { apiKeyDigest, isApiKey, type ApiKeyStore } from "./api-key-store.js";
import { DEVICE_TOKEN_SECONDS, deviceSession, type DeviceTokenStore } from "./device-store.js";
import { readCredential } from "./gate.js";
import type { UserStoreWatch } from "./user-store-watch.js";

/**
 * Who is signed in: whether login is on with the users in force, and the session of a token (a
 * login's or a paired device's) or of a request, valid only while its user is among those users.
 * `credential` also takes an API key: only the doors and `hello` accept one (docs/PROTOCOL.md §19.1).
 */
export function sessionChecks(
  watch: UserStoreWatch,
  stores: { sessions: SessionStore; devices: DeviceTokenStore; keys: ApiKeyStore },
  clock: () => number,
  cookieName: (req: IncomingMessage) => string,
  revoke: (revocation: Revocation) => void,
) {
  const { sessions, devices, keys } = stores;
  async function enabledNow(): Promise<{ on: boolean; users: ReadonlyMap<string, string> }> {
    const snap = await watch.snapshot();
    return { on: watch.loginOn(), users: snap.users };
  }

  async function lookUp(token: string, withKeys: boolean): Promise<Session | undefined> {
    const [{ users: known }, now] = [await watch.snapshot(), Math.floor(clock() / 1000)];
    let session: Session | undefined;
    if (isApiKey(token)) {
      const key = withKeys ? await keys.find(apiKeyDigest(token)) : undefined;
      // A key does not expire; a connection it opened is looked at again after the device tokens' span.
      session = key && { token, username: key.username, expires_at: now + DEVICE_TOKEN_SECONDS };
    } else {
      session =
        (await sessions.get(token, now)) ??
        (await deviceSession(devices, token, now, (gone) => {
          for (const d of gone) revoke({ session: d.token_sha256 });
        }));
    }
    // The user check also covers a shared store fed by a process that still knows a removed user.
    return session !== undefined && known.has(session.username) ? session : undefined;
  }

  async function sessionOf(req: IncomingMessage): Promise<Session | undefined> {
    const credential = readCredential(req, cookieName(req));
    return credential === undefined ? undefined : lookUp(credential.token, false);
  }

  return {
    enabledNow,
    validSession: (token: string) => lookUp(token, false),
    credential: (token: string) => lookUp(token, true),
    sessionOf,
  };
}
