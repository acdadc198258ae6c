/**
 * The `Authenticator` contract: how `hello.token` becomes an owner.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import { ANONYMOUS_OWNER, type DeviceId, type Owner } from "../protocol/ids.js";

/**
 * What ended. `session`: the login session with this id (the id an authenticator returned in
 * `AuthResult.sessions`; the login protection uses the SHA-256 hex of the token). `user`: every
 * connection whose `hello.ok.user` is this name. `anonymous`: every connection admitted without a
 * user (`user: null`, login was off).
 */
export type Revocation = { session: string } | { user: string } | { anonymous: true };

/** What the transport knows about a connection before `hello`. */
export interface ConnectionContext {
  /** The peer's address. */
  remoteAddress?: string;
  /**
   * The login session the transport already verified on the upgrade request (bearer or cookie),
   * when login protection is on: its username and token. Absent when the upgrade carried none.
   */
  session?: { username: string; token: string };
  /** Request headers of the upgrade, lower-case names. */
  headers?: Record<string, string | string[] | undefined>;
}

/** Who a connection acts for. */
export interface AuthResult {
  /** Scope of every channel, message, media item and device the connection touches. */
  owner: Owner;
  /** The signed-in username for `hello.ok.user`, or null when login is off. */
  user: string | null;
  /**
   * Ids of the login sessions the connection was admitted with (default none). A
   * {@link Revocation} `{session}` naming any of them closes the connection with 4401.
   */
  sessions?: readonly string[];
  /**
   * When the credential ends, in milliseconds since the epoch (default never). The gateway closes
   * the connection with 4401 at that moment (on its `now` clock).
   */
  expiresAt?: number;
}

/** What an authenticator is asked. */
export interface AuthRequest {
  /** `hello.token`, possibly empty. */
  token: string;
  deviceId: DeviceId;
  context: ConnectionContext;
}

/**
 * Turns a `hello` into an owner. Reject with a {@link GatewayError} of code `auth` (or return
 * `null`) to refuse: the gateway answers `error {code: "auth"}` and closes with 4401. Any other
 * rejection is reported as `internal` and also closes the connection.
 */
export interface Authenticator {
  authenticate(request: AuthRequest): Promise<AuthResult | null>;
  /**
   * Optional: tell the gateway when credentials end. `createGateway` subscribes once and closes
   * every connection a {@link Revocation} matches with `error {code: "auth"}` and 4401 (as
   * `gateway.revoke()` does); `gateway.close()` calls the returned unsubscribe function.
   */
  onRevocation?(listener: (revocation: Revocation) => void): () => void;
}

/** Accepts every token: one anonymous owner. The default when login protection is off. */
export function openAuthenticator(): Authenticator {
  return {
    async authenticate() {
      return { owner: ANONYMOUS_OWNER, user: null };
    },
  };
}

/**
 * Accepts a fixed set of tokens, each for its own owner. Handy for device tokens and tests.
 * @param tokens map of token to owner
 */
export function tokenAuthenticator(tokens: Record<string, Owner>): Authenticator {
  const table = new Map(Object.entries(tokens));
  return {
    async authenticate({ token }) {
      const owner = table.get(token);
      if (owner === undefined) throw new GatewayError("auth", "unknown token");
      return { owner, user: owner };
    },
  };
}
