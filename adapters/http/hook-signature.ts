/**
 * The `X-Hook-Signature` of a webhook post (docs/PROTOCOL.md §17):
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the hook's secret>`.
 * @module
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** How far `t` may be from the gateway's clock, in seconds. */
export const HOOK_TOLERANCE_SECONDS = 300;

const HEADER = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/;

/** The header's parts, or undefined when it is missing or malformed. */
export interface HookSignature {
  t: number;
  v1: string;
}

/** Parses the header; undefined when it is absent or not of the documented shape. */
export function parseHookSignature(header: string | string[] | undefined): HookSignature | undefined {
  if (typeof header !== "string") return undefined;
  const match = HEADER.exec(header.trim().toLowerCase());
  return match ? { t: Number(match[1]), v1: match[2] } : undefined;
}

/**
 * Signs a webhook body as a sender must: the header value for `body` at `t` (unix seconds).
 * @example
 * ```ts
 * const header = signHookBody(secret, JSON.stringify({ text: "build passed" }));
 * await fetch(url, { method: "POST", headers: { "x-hook-signature": header }, body });
 * ```
 */
export function signHookBody(
  secret: string,
  body: string | Uint8Array,
  t: number = Math.floor(Date.now() / 1000),
): string {
  return `t=${t},v1=${hmac(secret, t, body).toString("hex")}`;
}

function hmac(secret: string, t: number, body: string | Uint8Array): Buffer {
  return createHmac("sha256", secret).update(`${t}.`).update(body).digest();
}

/**
 * True when the signature is the secret's for this body and `t` is within the tolerance of
 * `nowMs`. The HMACs are compared in constant time, so the answer's timing says nothing of how
 * much of a guess was right.
 */
export function verifyHookSignature(
  secret: string,
  body: Uint8Array,
  signature: HookSignature,
  nowMs: number,
): boolean {
  if (Math.abs(nowMs / 1000 - signature.t) > HOOK_TOLERANCE_SECONDS) return false;
  return timingSafeEqual(hmac(secret, signature.t, body), Buffer.from(signature.v1, "hex"));
}
