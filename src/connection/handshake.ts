/**
 * The `hello` handshake of one connection, up to `hello.ok`: the hello's own fields, the
 * authenticator with revocation admission, the device record, and the per-owner connection cap
 * checked in the same step as the attach to the owner's frames. It decides and returns a
 * {@link HelloOutcome}; the connection sends the frames and closes.
 * @module
 */
import type { Authenticator, AuthResult, ConnectionContext } from "../contracts/authenticator.js";
import type { OutgoingFrame } from "../contracts/bus.js";
import { CLOSE_CODES, GatewayError, isGatewayError } from "../protocol/errors.js";
import type { ClientFrame } from "../protocol/client-frames.js";
import { helloLimits } from "./hello-limits.js";
import type { Owner, Seq } from "../protocol/ids.js";
import { LIMITS, PROTOCOL_VERSION } from "../protocol/limits.js";
import type { ServerFrame } from "../protocol/protocol.js";
import { FEATURES } from "../protocol/server-frames.js";
import { nextSubscription, pushCapsError, pushTargetError } from "../push/push-targets.js";
import type { Device, DeviceCaps } from "../contracts/records.js";
import type { AdmissionWatch } from "./revocation.js";
import { writeDevice } from "../storage/device-writes.js";
import type { OutboxBounds, Storage } from "../contracts/storage.js";
import type { ResolvedOptions } from "../options/options.js";
import type { EnsureDefaultChannel } from "../channels/channel-directory.js";
import type { ConnectionCount } from "../admission/connection-count.js";
import type { PublicUrls } from "../push/public-url.js";

export type HelloFrame = Extract<ClientFrame, { type: "hello" }>;

/**
 * A connection subscribed to its owner's frames: the cursor for `hello.ok`, and the stored frames
 * held back until it is out.
 */
export interface Attached {
  bounds: OutboxBounds;
  held: OutgoingFrame[];
}

/** What the handshake reads and writes through. */
export interface HandshakeServices {
  readonly authenticator: Authenticator;
  readonly storage: Storage;
  /** `hello.ok` announces the limits. */
  readonly options: ResolvedOptions;
  now(): number;
  readonly ensureDefaultChannel: EnsureDefaultChannel;
  /** Connections of the owner in this process that completed hello. */
  connectionCount(owner: Owner): number;
  /** Hellos per owner that passed the connection cap and are not attached yet: they hold their place under it. */
  readonly admitting: ConnectionCount;
  /** The origins the owners' devices connect through, where their pushes lead (docs/PROTOCOL.md §21). */
  readonly publicUrls: PublicUrls;
}

/** The connection a hello arrived on, as far as the handshake decides anything about it. */
export interface HelloConnection {
  readonly context: ConnectionContext;
  /** Hears revocations while the authenticator runs; on admit it arms {@link expired}. */
  readonly admission: AdmissionWatch;
  /** Re-read after every await: the connection may have closed meanwhile. */
  isClosed(): boolean;
  /**
   * Subscribes the connection to the owner's frames and reads the cursor for `hello.ok`. The handshake calls it in the
   * synchronous step that gives up the hello's place under the per-owner cap, so it must count the connection before
   * its first await.
   */
  attach(owner: Owner): Promise<Attached>;
  /**
   * The admitted credential's `expiresAt` came: ends the connection unless it is closed already. It
   * may run later, after `hello.ok`, or within the admission when the credential expired already.
   */
  readonly expired: () => void;
}

/** How a connection closes after the `error` frame of a refusal. */
export interface CloseWith {
  readonly code: number;
  readonly reason: string;
}

/** After `error` auth: the credential is missing, invalid or ended. */
export const AUTH_CLOSE: CloseWith = { code: CLOSE_CODES.auth, reason: "auth" };
/** After `error` rate_limited: too many connections for the owner or the client address. */
export const BUSY_CLOSE: CloseWith = { code: CLOSE_CODES.tooManyConnections, reason: "too many connections" };
/** After `error` unsupported naming a hello field outside its grammar: the same hello would fail again. */
const INVALID_CLOSE: CloseWith = { code: CLOSE_CODES.invalidHello, reason: "invalid hello" };
/** After `error` unsupported: the device needs a newer protocol than this gateway speaks. */
const TOO_NEW_CLOSE: CloseWith = { code: CLOSE_CODES.protocolTooNew, reason: "protocol too new" };

/** Admitted: the connection becomes ready, sends `helloOk` and then the frames held back in `attached`. */
export interface HelloReady {
  readonly kind: "ready";
  readonly auth: AuthResult;
  /** The device record as stored. */
  readonly device: Device;
  /** Already subscribed: the connection must start delivery or close. */
  readonly attached: Attached;
  readonly helloOk: ServerFrame;
}

/** Refused by the protocol: send `error` with `error`, then close with `close`. Nothing was stored. */
export interface HelloRefused {
  readonly kind: "refused";
  readonly error: GatewayError;
  readonly close: CloseWith;
}

/**
 * The gateway's side broke (`what` failed): log it, answer with the error (`internal` unless it is a
 * GatewayError), and close with 1011.
 */
export interface HelloFailed {
  readonly kind: "failed";
  readonly what: string;
  readonly error: unknown;
}

/** The connection closed while the handshake waited: nothing is left to do. */
export interface HelloGone {
  readonly kind: "gone";
}

/** What the handshake decided; the connection acts on it. */
export type HelloOutcome = HelloReady | HelloRefused | HelloFailed | HelloGone;

/** Any outcome but ready: the hello ends here. */
type Stopped = Exclude<HelloOutcome, HelloReady>;

const GONE: HelloGone = { kind: "gone" };

function refused(error: GatewayError, close: CloseWith): HelloRefused {
  return { kind: "refused", error, close };
}

/**
 * Decides a `hello`: its own fields, the authenticator with revocation admission, the device record,
 * and the per-owner connection cap checked in the same step as the attach to the owner's frames.
 */
export async function shakeHands(
  services: HandshakeServices,
  frame: HelloFrame,
  conn: HelloConnection,
): Promise<HelloOutcome> {
  const caps = helloCaps(frame.payload);
  const invalid = checkHello(services, frame.payload, caps);
  if (invalid) return invalid;
  const authenticated = await authenticate(services, frame, conn);
  if (authenticated.kind !== "authenticated") return authenticated;
  const { auth } = authenticated;
  // The cap comes before the device record, so a refused hello stores nothing. Its place is held
  // from this synchronous step until the attach counts it, so parallel hellos cannot all pass it.
  const { admitting, connectionCount, options } = services;
  const most = options.maxConnectionsPerOwner;
  if (!admitting.tryAdd(auth.owner, most - connectionCount(auth.owner))) {
    const error = new GatewayError("rate_limited", `too many connections for this owner (at most ${most})`);
    return refused(error, BUSY_CLOSE);
  }
  try {
    let attaching: Promise<Attached>;
    let device: Device;
    try {
      device = await registerDevice(services, auth.owner, frame.payload, caps);
      if (conn.isClosed()) return GONE;
      attaching = conn.attach(auth.owner);
    } finally {
      admitting.release(auth.owner);
    }
    const attached = await attaching;
    if (conn.isClosed()) return GONE;
    services.publicUrls.seen(auth.owner, conn.context.headers);
    return { kind: "ready", auth, device, attached, helloOk: helloOk(services, attached.bounds.last, auth.user) };
  } catch (error) {
    return { kind: "failed", what: "hello failed", error };
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

/** The hello's own fields, before any credential is looked at: their refusal, or undefined. */
function checkHello(services: HandshakeServices, p: HelloFrame["payload"], caps: DeviceCaps): HelloRefused | undefined {
  if (!p.device_id) {
    return refused(new GatewayError("auth", `hello: field "device_id" must be a non-empty string`), AUTH_CLOSE);
  }
  const invalid = deviceFieldError(p) ?? pushTargetError("hello", p) ?? pushCapsError(caps.push, services.options.push);
  // 1008 rather than a close a device retries after: the same hello would fail again.
  if (invalid) return refused(invalid, INVALID_CLOSE);
  if (caps.min_protocol > PROTOCOL_VERSION) {
    const message = `this gateway speaks protocol ${PROTOCOL_VERSION}; the device needs ${caps.min_protocol}`;
    return refused(new GatewayError("unsupported", message), TOO_NEW_CLOSE);
  }
  return undefined;
}

/** A `device_id` or `device_name` longer than the protocol allows (docs/PROTOCOL.md §2.1): its error. */
function deviceFieldError(p: HelloFrame["payload"]): GatewayError | undefined {
  const max = LIMITS.deviceFieldMax;
  for (const field of ["device_id", "device_name"] as const) {
    const value = p[field];
    // Characters are code points; a string of at most `max` code units has no more of them.
    if (value !== undefined && value.length > max && (value.length > 2 * max || [...value].length > max))
      return new GatewayError("unsupported", `hello: field "${field}": use at most ${max} characters`);
  }
  return undefined;
}

/** Times the authenticator is asked for one hello when revocations keep flooding in meanwhile. */
const MAX_AUTH_ROUNDS = 3;

/** The authenticator's answer, carried to the next step. */
interface Authenticated {
  readonly kind: "authenticated";
  readonly auth: AuthResult;
}

/**
 * Asks the authenticator, then admits its answer unless a revocation heard while it ran covers it;
 * the admission arms the credential's expiry.
 */
async function authenticate(
  services: HandshakeServices,
  frame: HelloFrame,
  conn: HelloConnection,
): Promise<Authenticated | Stopped> {
  for (let round = 1; ; round++) {
    const answer = await askAuthenticator(services, frame, conn);
    if (answer.kind !== "authenticated") return answer;
    if (conn.isClosed()) {
      conn.admission.abandon();
      return GONE;
    }
    const verdict = conn.admission.admit(
      answer.auth,
      { now: () => services.now(), clock: services.options.clock },
      conn.expired,
    );
    // Too many revocations to remember came meanwhile: a new answer postdates them (fail closed at last).
    if (verdict === "recheck" && round < MAX_AUTH_ROUNDS) continue;
    if (verdict !== "admitted") {
      return refused(new GatewayError("auth", "your session ended; sign in again"), AUTH_CLOSE);
    }
    // A credential that expired already has closed the connection within admit.
    if (conn.isClosed()) return GONE;
    return answer;
  }
}

/** One question to the authenticator, revocations remembered meanwhile. */
async function askAuthenticator(
  services: HandshakeServices,
  frame: HelloFrame,
  conn: HelloConnection,
): Promise<Authenticated | Stopped> {
  const p = frame.payload;
  let auth: AuthResult | null;
  conn.admission.begin();
  try {
    auth = await services.authenticator.authenticate({ token: p.token, deviceId: p.device_id, context: conn.context });
  } catch (error) {
    conn.admission.abandon();
    if (isGatewayError(error) && error.code === "auth") return refused(error, AUTH_CLOSE);
    // The authenticator itself broke (a store down): not the device's fault, so not `auth`.
    return { kind: "failed", what: "authenticator failed", error };
  }
  if (!auth) {
    conn.admission.abandon();
    return refused(new GatewayError("auth", "invalid credential"), AUTH_CLOSE);
  }
  return { kind: "authenticated", auth };
}

/** Stores the device record; a push target the hello leaves out stays as it was. */
async function registerDevice(
  services: HandshakeServices,
  owner: Owner,
  p: HelloFrame["payload"],
  caps: DeviceCaps,
): Promise<Device> {
  // The default channel and the device record do not depend on each other: their round trips to
  // the storage overlap rather than queue, which shortens every hello of an owner the process has
  // not seen since it started.
  const [, device] = await Promise.all([services.ensureDefaultChannel(owner), storeDevice(services, owner, p, caps)]);
  return device;
}

/** Writes the device record of a hello (see `writeDevice`: unchanged but for `last_seen`, it is kept). */
function storeDevice(
  services: HandshakeServices,
  owner: Owner,
  p: HelloFrame["payload"],
  caps: DeviceCaps,
): Promise<Device> {
  return writeDevice(services.storage, owner, p.device_id, (previous) => {
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
