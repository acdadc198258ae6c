/**
 * What the gateway's sending code is typed against: the protocol's own frame union, and the part
 * of it bound for the outbox.
 * @module
 */
import type { ServerFrame, StoredFrameType } from "./server-frames.js";

export type { ServerFrame } from "./server-frames.js";

/** A frame bound for the outbox (it gets a `seq` when stored). */
export type StoredFrame = ServerFrame<StoredFrameType>;
