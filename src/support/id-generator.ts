/**
 * Ids the gateway mints. Time-ordered so that ids sort roughly by creation, which keeps storage
 * indexes append-mostly; random enough to never collide across processes.
 * @module
 */
import { randomBytes } from "node:crypto";

let lastMs = 0;
let counter = 0;

/** A 26-character, time-ordered, URL-safe id with a prefix, e.g. `m_0mf3k2…`. */
export function newId(prefix: string): string {
  const ms = Date.now();
  counter = ms === lastMs ? counter + 1 : 0;
  lastMs = ms;
  return `${prefix}_${ms.toString(36).padStart(9, "0")}${counter.toString(36).padStart(3, "0")}${randomBytes(8).toString("base64url")}`;
}
