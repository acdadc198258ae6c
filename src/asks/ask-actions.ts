/**
 * An ask answered from a push's button (docs/PROTOCOL.md §21): `POST /api/asks/{picker_id}/act
 * {token}` with no session. The token is judged first (401, one answer for every bad one); a
 * good one answers through the same first-answer-wins path as `picker.select`, as the push
 * target's device, and its outcome then stands for it: the resolved ask when its answer won
 * (200, again on a repeat), 410 when the ask was resolved otherwise or expired.
 * @module
 */
import { randomUUID } from "node:crypto";
import type { ActionTokenRecord } from "../contracts/action-tokens.js";
import type { Storage } from "../contracts/storage.js";
import type { OutgoingFrame } from "../contracts/bus.js";
import { GatewayError } from "../protocol/errors.js";
import { actionTokenHash, isActionTokenShape } from "../push/action-tokens.js";
import type { AskServices } from "./ask-services.js";
import { sleep } from "../support/clock.js";
import { selectPicker } from "./ask-answers.js";
import { findPicker } from "./picker-lookup.js";

/** How an action came out: the HTTP status and, for 200, the `picker.resolved` payload. */
export type AskActionOutcome = { status: 200; payload: Record<string, unknown> } | { status: 401 } | { status: 410 };

const REFUSED: AskActionOutcome = { status: 401 };
const GONE: AskActionOutcome = { status: 410 };
/** How long an answer relayed to another process is looked for in storage (ms). */
const STORED_WAIT_MS = 5_000;
const STORED_POLL_MS = 50;

/** What redeeming reads and answers through. */
export type AskActionServices = AskServices & { readonly storage: Storage };

/**
 * Redeem an action token for the ask `pickerId` (and `optionId`, when the request names one).
 * Never says why a token is refused; rejects only when the storage or the answer failed
 * (nothing is then settled, and the token still works).
 */
export async function redeemActionToken(
  services: AskActionServices,
  pickerId: string,
  token: unknown,
  optionId?: string,
): Promise<AskActionOutcome> {
  const store = services.storage.actionTokens;
  if (!store || !isActionTokenShape(token)) return REFUSED;
  const record = await store.getActionToken(actionTokenHash(token));
  if (!record || record.picker_id !== pickerId) return REFUSED;
  if (optionId !== undefined && optionId !== record.option_id) return REFUSED;
  if (record.outcome !== undefined) return parsed(record.outcome);
  const result = record.expires_at <= services.now() ? GONE : await answer(services, record);
  const standing = await store.settleActionToken(record.hash, JSON.stringify(result));
  return standing === undefined ? REFUSED : parsed(standing);
}

function parsed(outcome: string): AskActionOutcome {
  const value = JSON.parse(outcome) as AskActionOutcome;
  return value.status === 200 || value.status === 410 ? value : REFUSED;
}

/** Select the token's option as its device; 200 when this answer is the one that stands. */
async function answer(services: AskActionServices, record: ActionTokenRecord): Promise<AskActionOutcome> {
  let resolved: Record<string, unknown> | undefined;
  const session = {
    id: `act-${randomUUID()}`,
    owner: record.owner,
    device: { device_id: record.device_id },
    respond(frame: OutgoingFrame) {
      if (frame.type === "picker.resolved") resolved = frame.payload as Record<string, unknown>;
    },
  };
  try {
    await selectPicker(services, session, { picker_id: record.picker_id, option_id: record.option_id }, session.id);
  } catch (error) {
    // The ask is gone from the outbox, or no longer takes this option: it is not open.
    if (error instanceof GatewayError && (error.code === "not_found" || error.code === "unsupported")) return GONE;
    throw error;
  }
  // Relayed to the process that holds the ask: its outcome is read where every process stores it.
  resolved ??= await storedOutcome(services, record);
  if (!resolved) throw new GatewayError("internal", "the ask's outcome did not arrive in time; try again");
  const won =
    resolved.outcome === "selected" &&
    resolved.option_id === record.option_id &&
    resolved.device_id === record.device_id;
  return won ? { status: 200, payload: resolved } : GONE;
}

async function storedOutcome(
  services: AskActionServices,
  record: ActionTokenRecord,
): Promise<Record<string, unknown> | undefined> {
  for (let waited = 0; waited <= STORED_WAIT_MS; waited += STORED_POLL_MS) {
    const found = await findPicker(services, record.owner, record.picker_id);
    if (found?.resolved) return found.resolved as Record<string, unknown>;
    await sleep(services.options.clock, STORED_POLL_MS, true);
  }
  return undefined;
}
