import type { IncomingMessage } from "node:http";
import { createRequestGuard, type GuardRefusal, type RequestGuardOptions } from "../http/request-guard.js";

/** The options of the ws adapter that decide whether and how it applies the Host and Origin rules. */
export interface UpgradeGuardOptions extends Pick<RequestGuardOptions, "allowedOrigins" | "allowedHosts"> {
  authorizeUpgrade?: unknown;
}

/**
 * The Host and Origin rules (docs/PROTOCOL.md §9) for the upgrades of `attachWebSocket`: applied
 * when there is no `authorizeUpgrade` gate or when `allowedOrigins` / `allowedHosts` is given. A
 * gate of its own (the login protection's) applies them itself, with its own options.
 * @throws {TypeError} on a bad `allowedOrigins` or `allowedHosts` entry
 */
export function upgradeGuard(
  options: UpgradeGuardOptions,
): ((request: IncomingMessage) => GuardRefusal | undefined) | undefined {
  const configured = options.allowedOrigins !== undefined || options.allowedHosts !== undefined;
  if (options.authorizeUpgrade !== undefined && !configured) return undefined;
  const guard = createRequestGuard(
    { allowedOrigins: options.allowedOrigins, allowedHosts: options.allowedHosts },
    "attachWebSocket",
  );
  return (request) => guard.host(request) ?? guard.origin(request);
}
