/**
 * What the gateway's sending code is typed against: a frame as the gateway builds it (a known
 * type, its payload shaped by the code that builds it) and one bound for the outbox. The exact
 * shape of each payload is its struct in server-frames.ts.
 * @module
 */
import type { ServerFrameType, StoredFrameType } from "./server-frames.js";

/** A gateway → client frame as the gateway builds it: a known type and its payload. */
export interface ServerFrame {
  type: ServerFrameType;
  payload: Record<string, unknown>;
}

/** A frame bound for the outbox (it gets a `seq` when stored). */
export interface StoredFrame extends ServerFrame {
  type: StoredFrameType;
}
