/**
 * The client's typed event map and the connection states it reports.
 * @module
 */
import type { ClientError } from "./errors.js";
import type { MessageUpdatePayload, OpenAsk } from "./frames.js";
import type { ServerFrame, ServerFrameType, ServerPayloads } from "chat-gateway/protocol";
import type { LaneQueue, RunningTurn } from "./live-turns.js";

/**
 * Where the connection is:
 * `connecting` (first attempt), `syncing` (hello done, catching up with `sync`), `open`,
 * `reconnecting` (waiting for the next attempt), `unauthorized` (the gateway or the HTTP gate
 * refused the credential; no more attempts), `closed` (by {@link GatewayClient.close}).
 */
export type ConnectionState = "connecting" | "syncing" | "open" | "reconnecting" | "unauthorized" | "closed";

/** Details that come with a `state` event. */
export interface StateInfo {
  /** For `reconnecting`: milliseconds until the next attempt. */
  retryInMs?: number;
  /** Failed attempts in a row. */
  attempt?: number;
  /** For `unauthorized` and `closed`: why. */
  reason?: string;
}

/**
 * Every event of the client: one per gateway frame type (payload, whole frame), plus the client's
 * own. Responses are emitted too (a `history` response is also a `history` event), and a stored
 * frame (one with `seq`) is emitted once even when a sync replays it again.
 */
export type GatewayClientEvents = {
  [K in Exclude<ServerFrameType, "message.update">]: (payload: ServerPayloads[K], frame: ServerFrame<K>) => void;
} & {
  /** A streamed answer grew: `text` is always the whole text (delta appends already applied, docs/PROTOCOL.md §12). */
  "message.update": (payload: MessageUpdatePayload, frame: ServerFrame<"message.update">) => void;
  /** The connection state changed. */
  state: (state: ConnectionState, info: StateInfo) => void;
  /** Every frame, before its own event (duplicates of already seen stored frames are dropped before this). */
  frame: (frame: ServerFrame) => void;
  /** A sync ended (after every connect); the cursor is up to date. */
  synced: (cursor: number) => void;
  /** The gateway no longer has the frames after this device's cursor: refetch history and channels. */
  reset: (cursor: number) => void;
  /**
   * A delta `message.update` did not fit the text held for `messageId` (docs/PROTOCOL.md §12): it
   * was dropped, and so is every later append of that answer until a whole `text` or its
   * `message.stop`, whose `final_text` is the answer. The last `message.update` event stays valid.
   */
  "stream.gap": (messageId: string) => void;
  /**
   * The open asks changed (docs/PROTOCOL.md §11): a picker frame opened one, or `picker.resolved`
   * (an answer from any device, an expiry, `/stop`, a restart) closed one. `open` is the whole
   * list, oldest first, as {@link GatewayClient.openAsks} returns it.
   */
  asks: (open: OpenAsk[]) => void;
  /** The running answers changed (docs/PROTOCOL.md §14.3): `running` is {@link GatewayClient.runningTurns}. */
  turns: (running: RunningTurn[]) => void;
  /**
   * The unread counts changed (docs/PROTOCOL.md §15): `counts` is {@link GatewayClient.unreadCounts},
   * by `chat_id`, from the first `channel.list` on.
   */
  unread: (counts: Record<string, number>) => void;
  /** A lane's queue changed (docs/PROTOCOL.md §14.4): `queues` lists every lane with waiting messages. */
  queues: (queues: LaneQueue[]) => void;
  /**
   * A text frame from the gateway was not a valid frame of this protocol (not JSON, a wrong
   * envelope, a missing or mistyped field): it was dropped, and `error` (code `unsupported`) says
   * why. Frames of types this version does not know are ignored without this event.
   */
  "frame.invalid": (error: ClientError) => void;
  /** The credential was refused (close 4401, HTTP 401, or `checkAuth` said so); the client stopped. */
  unauthorized: (reason: string) => void;
};
