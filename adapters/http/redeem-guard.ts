/**
 * What keeps a pairing link from signing a browser into another account (docs/PROTOCOL.md §16):
 * the redeem and its look-up come only from the server's own site, and a redeem replaces the
 * signed-in session of another user only when the person said yes to that.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Session } from "chat-gateway";
import { sendJson, type AuthContext } from "./auth-api.js";
import { deviceTokenDigest, type DeviceTokenStore } from "./device-store.js";

/**
 * A browser marks a request that another site's page made with `Sec-Fetch-Site: cross-site`. The
 * pairing endpoints refuse it (403) even from an `allowedOrigins` page: no other site has a reason
 * to redeem a code, and a redeem sets the session cookie. True when it answered.
 */
export function refuseOtherSite(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.headers["sec-fetch-site"] !== "cross-site") return false;
  req.resume();
  sendJson(res, 403, { error: "cross-site request refused: redeem a pairing code on this server's own page" });
  return true;
}

/**
 * Whether a redeem may go on, the request being signed in as `current` (or not at all) and the
 * code being for `joining`: a session of another user is replaced only when the body says
 * `replace_session: true`, which the web UI sends once the person agreed to leave `current`.
 * Answers 409 and returns false otherwise.
 */
export function mayReplace(
  current: Session | undefined,
  joining: string,
  replace: boolean,
  res: ServerResponse,
): boolean {
  if (current === undefined || current.username === joining || replace) return true;
  sendJson(res, 409, {
    error: `this browser is signed in as ${current.username}: send replace_session: true once the person agreed to sign out of ${current.username} and join ${joining}`,
    signed_in_as: current.username,
  });
  return false;
}

/**
 * Signs out the session a redeem replaces: a login session is deleted, a device token's device is
 * revoked, and either way its connections close with 4401 (a session's id and a device token's
 * digest are both the SHA-256 of the token).
 */
export async function endReplaced(ctx: AuthContext, devices: DeviceTokenStore, session: Session): Promise<void> {
  const digest = deviceTokenDigest(session.token);
  try {
    await ctx.sessions.delete(session.token);
    const device = await devices.find(digest);
    if (device !== undefined) await devices.remove(device.username, device.device_id);
  } finally {
    ctx.revoke({ session: digest });
  }
}
