// ACP session ids are the gateway's lanes written as `chat_id/thread_id` (docs/PROTOCOL.md §20).
import { RequestError } from "@agentclientprotocol/sdk";
import type { LaneRef } from "chat-gateway/client";

/** A lane of the gateway, with a thread: the bridge's sessions always live in a thread. */
export interface Lane extends LaneRef {
  chat_id: string;
  thread_id: string | null;
}

/** `chat_id/thread_id`, or `chat_id` for a channel's flat lane. */
export function sessionIdOf(lane: LaneRef): string {
  return lane.thread_id ? `${lane.chat_id}/${lane.thread_id}` : lane.chat_id;
}

/** The lane a session id names; a malformed one is the ACP "session not found" error. */
export function laneOf(sessionId: string): Lane {
  const parts = sessionId.split("/");
  if (parts.length > 2 || parts.some((part) => part.length === 0)) throw RequestError.sessionNotFound(sessionId);
  return { chat_id: parts[0]!, thread_id: parts[1] ?? null };
}

/** Whether a frame's payload belongs to `lane`. */
export function inLane(payload: { chat_id?: unknown; thread_id?: unknown }, lane: LaneRef): boolean {
  return payload.chat_id === lane.chat_id && (payload.thread_id ?? null) === (lane.thread_id ?? null);
}
