/**
 * Where a push leads (docs/PROTOCOL.md §21): the gateway's public URL, given as an option or, by
 * default, the origin through which the owner's devices last connected, and a lane's URL on it.
 * @module
 */
import type { Owner } from "../protocol/ids.js";

/** Owners whose last origin a process remembers; the oldest is forgotten first. */
const ORIGINS_KEPT = 10_000;

/**
 * The `publicUrl` option checked: an `http:` or `https:` URL with no query, fragment or
 * credentials, returned without a trailing slash.
 * @throws {TypeError} for anything else
 */
export function publicUrlOf(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = typeof value === "string" ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash || url.username || url.password) {
    throw new TypeError("createGateway: `publicUrl` must be an http: or https: URL without a query or a fragment");
  }
  return url.href.replace(/\/+$/, "");
}

/** The origin a connection's `Origin` header names, or undefined when it names none usable. */
export function originOf(headers: Record<string, string | string[] | undefined> | undefined): string | undefined {
  const origin = headers?.origin;
  if (typeof origin !== "string") return undefined;
  try {
    const url = new URL(origin);
    return /^https?:$/.test(url.protocol) ? url.origin : undefined;
  } catch {
    return undefined;
  }
}

/** The public URL of each owner's pushes: the configured one, else the origin last seen. */
export class PublicUrls {
  readonly #configured: string | undefined;
  readonly #seen = new Map<Owner, string>();

  constructor(configured: string | undefined) {
    this.#configured = configured;
  }

  /** A device of the owner connected with these upgrade headers. */
  seen(owner: Owner, headers: Record<string, string | string[] | undefined> | undefined): void {
    if (this.#configured !== undefined) return;
    const origin = originOf(headers);
    if (origin === undefined) return;
    this.#seen.delete(owner);
    this.#seen.set(owner, origin);
    if (this.#seen.size > ORIGINS_KEPT) this.#seen.delete(this.#seen.keys().next().value as Owner);
  }

  /** The owner's public URL, or undefined when none is configured or seen. */
  of(owner: Owner): string | undefined {
    return this.#configured ?? this.#seen.get(owner);
  }
}

/**
 * A lane's URL as the web UI opens it (`/?chat=…&thread=…`), on `base` when there is one, else
 * the path alone.
 */
export function laneUrl(base: string | undefined, lane: { chat_id?: string; thread_id?: string | null }): string {
  const query = new URLSearchParams();
  if (lane.chat_id !== undefined) query.set("chat", lane.chat_id);
  if (lane.thread_id) query.set("thread", lane.thread_id);
  const path = query.size > 0 ? `/?${query}` : "/";
  return `${base ?? ""}${path}`;
}
