/**
 * One-time pairing codes (docs/PROTOCOL.md §16): 10 characters from an alphabet without look-alikes
 * (no 0/O, 1/I/L), valid 5 minutes, redeemable once. They live in this process's memory: a code is
 * redeemed within minutes, on the server that showed it.
 * @module
 */
import { randomInt } from "node:crypto";

/** The characters of a pairing code: digits and capitals that cannot be mistaken for each other. */
export const PAIRING_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
/** Length of a pairing code (31^10, about 49 bits). */
export const PAIRING_CODE_LENGTH = 10;
/** How long a pairing code is valid, in seconds. */
export const PAIRING_CODE_SECONDS = 300;
/** Codes one user may have open at once; the oldest is dropped past it. */
const MAX_OPEN_PER_USER = 5;

/** A code as the table keys it: spaces and dashes dropped, upper case. */
function codeKey(code: string): string {
  return code.replace(/[\s-]/g, "").toUpperCase();
}

interface Pending {
  username: string;
  name: string;
  /** `{paired_by}` when a paired device asked for the code (docs/PROTOCOL.md §16), else empty. */
  pairedBy: { paired_by?: string };
  /** Unix seconds. */
  expires_at: number;
}

/** The open pairing codes of one server. Times are Unix seconds, from the caller. */
export class PairingCodes {
  readonly #open = new Map<string, Pending>();

  /**
   * A new code for `username`, the device to be named `name` unless the redeemer names it;
   * `pairedBy` is the `device_id` of the paired device that asked for it, if one did.
   */
  create(username: string, name: string, now: number, pairedBy?: string): { code: string; expires_at: number } {
    this.sweep(now);
    const mine = [...this.#open].filter(([, p]) => p.username === username);
    if (mine.length >= MAX_OPEN_PER_USER) this.#open.delete(mine[0]![0]);
    let code = "";
    for (let i = 0; i < PAIRING_CODE_LENGTH; i++) code += PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)];
    const expires_at = now + PAIRING_CODE_SECONDS;
    this.#open.set(code, {
      username,
      name,
      pairedBy: pairedBy === undefined ? {} : { paired_by: pairedBy },
      expires_at,
    });
    return { code, expires_at };
  }

  /**
   * The pairing of a code that is open and unexpired, else undefined, leaving it open: what the
   * person is asked to confirm before the redeem uses it up (docs/PROTOCOL.md §16).
   */
  peek(code: string, now: number): Pending | undefined {
    const pending = this.#open.get(codeKey(code));
    return pending !== undefined && pending.expires_at > now ? pending : undefined;
  }

  /** Uses a code up: its pairing when it is open and unexpired, else undefined. Case and spaces are forgiven. */
  take(code: string, now: number): Pending | undefined {
    const key = codeKey(code);
    const pending = this.#open.get(key);
    if (pending === undefined) return undefined;
    this.#open.delete(key);
    return pending.expires_at > now ? pending : undefined;
  }

  /** Forgets the codes of a user (removed, or given a new password). */
  dropUser(username: string): void {
    for (const [code, p] of this.#open) if (p.username === username) this.#open.delete(code);
  }

  /** Forgets expired codes. */
  sweep(now: number): void {
    for (const [code, p] of this.#open) if (p.expires_at <= now) this.#open.delete(code);
  }
}
