/**
 * The `hello` handshake of one connection, up to `hello.ok`: the hello's own fields, the
 * authenticator with revocation admission, the device record, and the per-owner connection cap
 * checked in the same step as the attach to the owner's frames.
 * @module
 */
import type { Authenticator, AuthResult, ConnectionContext } from "../contracts/authenticator.js";
import type { OutgoingFrame } from "../contracts/bus.js";
import { CLOSE_CODES, GatewayError, isGatewayError, toWireError } from "../protocol/errors.js";
import type { ClientFrame } from "../protocol/client-frames.js";
import { helloLimits } from "./hello-limits.js";
import type { Owner, RequestId, Seq } from "../protocol/ids.js";
import { PROTOCOL_VERSION } from "../protocol/limits.js";
import type { ServerFrame } from "../protocol/protocol.js";
import { FEATURES } from "../protocol/server-frames.js";
import { nextSubscription, pushCapsError, pushTargetError } from "../push/push-targets.js";
import type { Device, DeviceCaps } from "../contracts/records.js";
import type { AdmissionWatch } from "./revocation.js";
import { writeDevice } from "../storage/device-writes.js";
import type { OutboxBounds, Storage } from "../contracts/storage.js";
import type { Logger } from "../contracts/logger.js";
import type { ResolvedOptions } from "../options/options.js";
import type { EnsureDefaultChannel } from "../channels/channel-directory.js";
import type { ConnectionCount } from "./connection-count.js";

export type HelloFrame = Extract<ClientFrame, { type: "hello" }>;

/** A connection subscribed to its owner's frames: the cursor for `hello.ok`, and the stored frames held back until it is out. */
export interface Attached {
  bounds: OutboxBounds;
  held: OutgoingFrame[];
}

/** What the handshake reads and writes through. */
export interface HandshakeServices {
  readonly authenticator: Authenticator;
  readonly storage: Storage;
  readonly log: Logger;
  /** `hello.ok` announces the limits. */
  readonly options: ResolvedOptions;
  now(): number;
  readonly ensureDefaultChannel: EnsureDefaultChannel;
  /** Connections of the owner in this process that completed hello. */
  connectionCount(owner: Owner): number;
  /** Hellos per owner that passed the connection cap and are not attached yet: they hold their place under it. */
  readonly admitting: ConnectionCount;
}

/** What the handshake needs from the connection it admits. */
export interface HelloHost {
  readonly services: HandshakeServices;
  readonly context: ConnectionContext;
  readonly admission: AdmissionWatch;
  /** Re-reads the state after an await (TypeScript keeps the narrowing from before it). */
  isClosed(): boolean;
  send(frame: ServerFrame, requestId?: RequestId): void;
  close(code: number, reason: string): void;
  /** `error` auth, then close with 4401. */
  refuseAuth(error: GatewayError, requestId?: RequestId): void;
  /** `error` rate_limited, then close as too many connections. */
  refuseBusy(message: string, requestId?: RequestId): void;
  sendError(error: unknown, requestId: RequestId | undefined): void;
  /** Subscribes to the owner's frames; it attaches synchronously, before its first await. */
  attach(owner: Owner): Promise<Attached>;
  /** Admitted: the connection becomes ready, sends `helloOk` and then the frames held back. */
  ready(
    auth: AuthResult,
    device: Device,
    attached: Attached,
    helloOk: ServerFrame,
    requestId: RequestId | undefined,
  ): void;
}

/** Runs `hello` through to `hello.ok`, or refuses it with the protocol's error code and closes. */
export async function shakeHands(host: HelloHost, frame: HelloFrame): Promise<void> {
  const caps = helloCaps(frame.payload);
  if (!acceptsHello(host, frame, caps)) return;
  const auth = await authenticate(host, frame);
  if (auth === undefined) return;
  // The cap comes before the device record, so a refused hello stores nothing. Its place is held
  // from this synchronous step until the attach counts it, so parallel hellos cannot all pass it.
  const { admitting, connectionCount, options } = host.services;
  const most = options.maxConnectionsPerOwner;
  if (!admitting.tryAdd(auth.owner, most - connectionCount(auth.owner)))
    return host.refuseBusy(`too many connections for this owner (at most ${most})`, frame.id);
  try {
    let attaching: Promise<Attached>;
    let device: Device;
    try {
      device = await registerDevice(host.services, auth.owner, frame.payload, caps);
      if (host.isClosed()) return;
      attaching = host.attach(auth.owner);
    } finally {
      admitting.release(auth.owner);
    }
    const attached = await attaching;
    if (host.isClosed()) return;
    host.ready(auth, device, attached, helloOk(host.services, attached.bounds.last, auth.user), frame.id);
  } catch (error) {
    failInternally(host, "hello failed", error, frame.id);
  }
}

function helloCaps(p: HelloFrame["payload"]): DeviceCaps {
  return {
    min_protocol: p.caps?.min_protocol ?? 1,
    media: p.caps?.media ?? true,
    push: p.caps?.push ?? "none",
    streaming: p.caps?.streaming ?? true,
    pickers: p.caps?.pickers ?? false,
    delta: p.caps?.delta ?? false,
  };
}

/** The hello's own fields, before any credential is looked at; false when it was refused. */
function acceptsHello(host: HelloHost, frame: HelloFrame, caps: DeviceCaps): boolean {
  const p = frame.payload;
  if (!p.device_id) {
    host.refuseAuth(new GatewayError("auth", `hello: field "device_id" must be a non-empty string`), frame.id);
    return false;
  }
  const invalid = pushTargetError("hello", p) ?? pushCapsError(caps.push, host.services.options.push);
  if (invalid) {
    // A hello field outside its grammar: the same hello would fail again, so 1008 rather than a retry.
    host.send({ type: "error", payload: toWireError(invalid) }, frame.id);
    host.close(CLOSE_CODES.invalidHello, "invalid hello");
    return false;
  }
  if (caps.min_protocol > PROTOCOL_VERSION) {
    host.send(
      {
        type: "error",
        payload: {
          code: "unsupported",
          message: `this gateway speaks protocol ${PROTOCOL_VERSION}; the device needs ${caps.min_protocol}`,
        },
      },
      frame.id,
    );
    host.close(CLOSE_CODES.protocolTooNew, "protocol too new");
    return false;
  }
  return true;
}

/** Times the authenticator is asked for one hello when revocations keep flooding in meanwhile. */
const MAX_AUTH_ROUNDS = 3;

/**
 * Asks the authenticator, then admits its answer unless a revocation heard while it ran covers it;
 * arms the credential's expiry. Undefined when the hello was refused or the connection closed.
 */
async function authenticate(host: HelloHost, frame: HelloFrame): Promise<AuthResult | undefined> {
  for (let round = 1; ; round++) {
    const auth = await askAuthenticator(host, frame);
    if (auth === undefined) return undefined;
    if (host.isClosed()) return void host.admission.abandon();
    const expired = () =>
      host.isClosed() || host.refuseAuth(new GatewayError("auth", "your session expired; sign in again"));
    const verdict = host.admission.admit(auth, () => host.services.now(), expired);
    // Too many revocations to remember came meanwhile: a new answer postdates them (fail closed at last).
    if (verdict === "recheck" && round < MAX_AUTH_ROUNDS) continue;
    if (verdict !== "admitted")
      return void host.refuseAuth(new GatewayError("auth", "your session ended; sign in again"), frame.id);
    if (host.isClosed()) return undefined;
    return auth;
  }
}

/** One question to the authenticator, revocations remembered meanwhile; undefined when refused. */
async function askAuthenticator(host: HelloHost, frame: HelloFrame): Promise<AuthResult | undefined> {
  const p = frame.payload;
  let auth;
  host.admission.begin();
  try {
    auth = await host.services.authenticator.authenticate({
      token: p.token,
      deviceId: p.device_id,
      context: host.context,
    });
  } catch (error) {
    host.admission.abandon();
    if (isGatewayError(error) && error.code === "auth") return void host.refuseAuth(error, frame.id);
    // The authenticator itself broke (a store down): not the device's fault, so not `auth`.
    return void failInternally(host, "authenticator failed", error, frame.id);
  }
  if (!auth) {
    host.admission.abandon();
    return void host.refuseAuth(new GatewayError("auth", "invalid credential"), frame.id);
  }
  return auth;
}

/** Stores the device record; a push target the hello leaves out stays as it was. */
async function registerDevice(
  services: HandshakeServices,
  owner: Owner,
  p: HelloFrame["payload"],
  caps: DeviceCaps,
): Promise<Device> {
  const storage = services.storage;
  await services.ensureDefaultChannel(owner);
  return writeDevice(storage, owner, p.device_id, (previous) => {
    const device: Device = {
      device_id: p.device_id,
      device_name: p.device_name ?? "",
      caps: sharedCaps(caps),
      last_seen: services.now(),
    };
    const fcm = p.fcm_token ?? previous?.fcm_token;
    const ntfy = p.ntfy_topic ?? previous?.ntfy_topic;
    if (fcm) device.fcm_token = fcm;
    if (ntfy) device.ntfy_topic = ntfy;
    const webpush = nextSubscription(p.webpush, previous?.webpush);
    if (webpush) device.webpush = webpush;
    return device;
  });
}

/** Caps seen, by their values: nearly every device of a fleet declares the same few. */
const capsSeen = new Map<string, DeviceCaps>();
/** Distinct caps kept; past it a hello's own object is used (`min_protocol` may be any number up to 1). */
const CAPS_SEEN_MAX = 64;

/**
 * One object for equal caps, held by every connected device that declared them, rather than one
 * each (bench/capacity.ts). Nobody changes a device's caps in place: a new hello stores new ones.
 */
function sharedCaps(caps: DeviceCaps): DeviceCaps {
  const key = JSON.stringify([caps.min_protocol, caps.media, caps.push, caps.streaming, caps.pickers, caps.delta]);
  const seen = capsSeen.get(key);
  if (seen) return seen;
  if (capsSeen.size < CAPS_SEEN_MAX) capsSeen.set(key, caps);
  return caps;
}

function helloOk(services: HandshakeServices, cursor: Seq, user: string | null): ServerFrame {
  const o = services.options;
  return {
    type: "hello.ok",
    payload: {
      protocol: PROTOCOL_VERSION,
      cursor,
      user,
      streaming: o.streaming,
      limits: helloLimits(o),
      features: [...FEATURES],
    },
  };
}

/** The gateway's side broke: logged, answered with the error, and the connection closed with 1011. */
function failInternally(host: HelloHost, what: string, error: unknown, requestId: RequestId | undefined): void {
  host.services.log.error(what, error);
  host.sendError(error, requestId);
  host.close(1011, "internal error");
}
