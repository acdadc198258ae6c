/** The numbers of login protection (docs/PROTOCOL.md §9), in one place. */
export const LOGIN_LIMITS = {
  /** Session lifetime in seconds (24 hours). */
  sessionSeconds: 86_400,
  /** bcrypt cost factor of new hashes. */
  bcryptCost: 12,
  /** Longest password accepted by `user add` / `user set-password`, in UTF-8 bytes; bcrypt reads no further. */
  maxPasswordBytes: 72,
  /** Longest username, in characters. */
  maxUsernameLength: 32,
  /** Failed logins of one client IP (an IPv6 /64) within the window that lock it out. */
  maxFailures: 10,
  /** The failure counting window in seconds. */
  failureWindowSeconds: 300,
  /** How long a lockout lasts, in seconds. */
  lockoutSeconds: 900,
  /** Logouts one client address (an IPv6 /64) may post per window; logout needs no account. */
  maxLogouts: 30,
  /** The logout counting window in seconds. */
  logoutWindowSeconds: 60,
  /** Pairing codes one client address (an IPv6 /64) may try to redeem per window (docs/PROTOCOL.md §16). */
  maxRedeems: 20,
  /** The redeem counting window in seconds. */
  redeemWindowSeconds: 60,
  /**
   * `Max-Age` of the cookie a redeem hands a browser: 400 days, the longest browsers keep one. The
   * device token's own lifetime (90 days from its last use) decides; the cookie only must not end first.
   */
  deviceCookieSeconds: 400 * 86_400,
} as const;
