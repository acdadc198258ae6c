/**
 * Asks over HTTP (docs/PROTOCOL.md §19.5): `GET /api/asks` lists the owner's open asks, oldest
 * first, and `POST /api/asks/{picker_id}` answers one exactly as `picker.select` does.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { PICKER_FRAME_TYPES } from "chat-gateway/protocol";
import type { Owner } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import type { DoorContext } from "./door-context.js";
import { openDoorSession } from "./door-session.js";
import { readJsonBody } from "./json-body.js";
import { invalidRequest, sendJson } from "./openai-errors.js";

const PICKER_TYPES = [...PICKER_FRAME_TYPES];
const TYPES = [...PICKER_TYPES, "picker.resolved"];
/** Frames read for one listing, at most; the default retention keeps 10,000 per owner. */
const SCAN_MAX = 20_000;
const PAGE = 500;

/** The owner's open asks as their picker frames' payloads, with `kind` the frame type, oldest first. */
export async function openAsks(storage: Storage, owner: Owner, now: number): Promise<Array<Record<string, unknown>>> {
  const open = new Map<string, Record<string, unknown>>();
  let after = Math.max(0, (await storage.outboxBounds(owner)).first - 1);
  for (let read = 0; read < SCAN_MAX; ) {
    const entries = await storage.readOutbox(owner, after, PAGE, TYPES);
    if (entries.length === 0) break;
    for (const entry of entries) {
      const p = entry.payload as Record<string, unknown>;
      if (entry.type === "picker.resolved") open.delete(String(p.picker_id));
      else if (PICKER_FRAME_TYPES.has(entry.type)) open.set(String(p.picker_id), { kind: entry.type, ...p });
    }
    read += entries.length;
    after = entries[entries.length - 1].seq;
  }
  return [...open.values()].filter((ask) => typeof ask.expires_at !== "number" || ask.expires_at > now);
}

/** `GET /api/asks`. */
export async function listAsks(ctx: DoorContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { device, owner } = await openDoorSession(ctx, req, "asks");
  try {
    sendJson(res, 200, { asks: await openAsks(ctx.storage, owner, Date.now()) });
  } finally {
    device.close();
  }
}

/** `POST /api/asks/{picker_id} {option_id?, text?}`: the `picker.resolved` payload, or 404 and 400. */
export async function answerAsk(
  ctx: DoorContext,
  req: IncomingMessage,
  res: ServerResponse,
  pickerId: string,
): Promise<void> {
  const body = await readJsonBody(req, 64 * 1024, ctx.bodyTimeoutMs);
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw invalidRequest("the body must be a JSON object");
  const { option_id: optionId, text } = body as Record<string, unknown>;
  if (optionId !== undefined && typeof optionId !== "string") throw invalidRequest("option_id must be a string");
  if (text !== undefined && typeof text !== "string") throw invalidRequest("text must be a string");
  const { device } = await openDoorSession(ctx, req, "asks");
  try {
    const resolved = await device.request("picker.select", {
      picker_id: pickerId,
      ...(optionId !== undefined ? { option_id: optionId } : {}),
      ...(text !== undefined ? { text } : {}),
    });
    sendJson(res, 200, resolved.payload);
  } finally {
    device.close();
  }
}
