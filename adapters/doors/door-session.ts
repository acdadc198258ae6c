/**
 * A door request's session: the request's credential said as a device's hello, and the owner the
 * gateway admitted it as (docs/PROTOCOL.md §19).
 * @module
 */
import type { IncomingMessage } from "node:http";
import { createHash } from "node:crypto";
import type { Gateway, Owner } from "chat-gateway";
import { DoorDevice, type DoorFrame } from "./door-device.js";
import { DoorError } from "./openai-errors.js";
import type { DoorContext } from "./door-context.js";

/** A device of a door request, and whom it acts for. */
export interface DoorSession {
  device: DoorDevice;
  owner: Owner;
}

/** The owner of each connection as the gateway admits it, waited for by connection id. */
const owners = new WeakMap<Gateway, Map<string, (owner: Owner) => void>>();

function ownerWaiters(gateway: Gateway): Map<string, (owner: Owner) => void> {
  let waiters = owners.get(gateway);
  if (!waiters) {
    const map = new Map<string, (owner: Owner) => void>();
    gateway.on("connect", (info) => map.get(info.connectionId)?.(info.owner));
    owners.set(gateway, map);
    waiters = map;
  }
  return waiters;
}

/** The bearer token of a request, or empty. */
export function bearerOf(req: IncomingMessage): string {
  const header = req.headers.authorization;
  if (typeof header !== "string") return "";
  const match = /^Bearer\s+(\S{1,4096})\s*$/i.exec(header);
  return match ? match[1] : "";
}

/**
 * Says the request's hello. Only the bearer is a credential: a cookie is never read, so a foreign
 * page cannot use a signed-in browser's session through a door. The device id is derived from the
 * credential, so one client's requests share one device record.
 */
export async function openDoorSession(
  ctx: DoorContext,
  req: IncomingMessage,
  door: string,
  onFrame?: (frame: DoorFrame) => void,
  media = false,
): Promise<DoorSession> {
  const { gateway, authorize } = ctx;
  const { cookie: _cookie, ...headers } = req.headers;
  if (ctx.unavailable()) throw new DoorError(503, "server_error", "the server is shutting down", "unavailable", 5);
  if (authorize) {
    const decision = await authorize(req);
    if (!decision.ok) {
      const type =
        decision.status === 401
          ? "authentication_error"
          : decision.status === 429
            ? "rate_limit_error"
            : "permission_error";
      throw new DoorError(decision.status, type, decision.message, null, decision.status === 429 ? 1 : undefined);
    }
  }
  const token = bearerOf(req);
  const device = `${door}-${createHash("sha256").update(token).digest("hex").slice(0, 16)}`;
  const waiters = ownerWaiters(gateway);
  let owner: Owner | undefined;
  let id = "";
  const opened = DoorDevice.open(gateway, {
    token,
    context: { remoteAddress: ctx.clientAddress(req), headers },
    deviceId: device,
    deviceName: door,
    media,
    onFrame,
    accepted: (connectionId) => {
      id = connectionId;
      waiters.set(id, (o) => {
        owner = o;
      });
    },
  });
  try {
    const opened_ = await opened;
    if (owner === undefined) {
      opened_.close();
      throw new DoorError(401, "authentication_error", "not signed in", "invalid_api_key");
    }
    return { device: opened_, owner };
  } finally {
    waiters.delete(id);
  }
}
