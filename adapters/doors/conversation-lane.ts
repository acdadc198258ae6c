/**
 * Where a stateless client's conversation goes (docs/PROTOCOL.md §19): the thread whose messages
 * are the request's earlier messages, or a new thread.
 * @module
 */
import type { Owner, StoredMessage } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import type { ChatTurn } from "./chat-input.js";
import { conversationKey, firstMessageKeys } from "./conversation-keys.js";
import type { DoorDevice } from "./door-device.js";

/** A lane of a channel: its flat lane (`thread_id` null) or one of its threads. */
export interface DoorLane {
  chat_id: string;
  thread_id: string | null;
}

/** Where and how the request's last message is sent. */
export interface Placement {
  /** The lane; `thread_id` null with `newThread` means "a new thread of this channel". */
  lane: DoorLane;
  newThread: boolean;
  /** The `client_msg_id` of the send. */
  key: string;
  /** Earlier messages to store in the new thread before the send (a fork of another conversation). */
  imports: ChatTurn[];
}

/** What placing a conversation reads. */
export interface PlacementContext {
  storage: Storage;
  owner: Owner;
  device: DoorDevice;
}

interface HistoryItem {
  message_id: string;
  role: string;
  text: string;
  status?: string;
  command?: true;
}

/** A stored message by key in the channel (its flat lane or a thread). */
async function byKey(ctx: PlacementContext, channel: string, key: string): Promise<StoredMessage | undefined> {
  return (await ctx.storage.findByClientMsgId?.(ctx.owner, channel, key)) ?? undefined;
}

/**
 * Whether the lane's newest messages are `message` and then exactly `answers` (commands left out,
 * text compared trimmed): the conversation the client holds is this lane's, up to now. The same
 * request arriving at once through another process may already have stored `last` (and begun its
 * answer) after them: that is still this conversation, and the send joins that message by its key.
 */
async function laneEndsWith(
  ctx: PlacementContext,
  message: StoredMessage,
  answers: ChatTurn[],
  last: string,
): Promise<boolean> {
  const page = await ctx.device.request("history", {
    chat_id: message.chat_id,
    thread_id: message.thread_id,
    limit: Math.min(200, answers.length + 8),
  });
  const items = ((page.payload.messages ?? []) as HistoryItem[]).filter((m) => m.command !== true);
  const at = items.findIndex((m) => m.message_id === message.message_id);
  if (at < 0) return false;
  const after = items.slice(at + 1);
  const extra = after.slice(answers.length);
  if (after.length < answers.length || !isSameRequest(extra, last)) return false;
  return answers.every(
    (turn, i) =>
      after[i].role === turn.role && after[i].status !== "streaming" && after[i].text.trim() === turn.text.trim(),
  );
}

/** Nothing, or `last` as a user message and at most its answer: the same request, stored elsewhere first. */
function isSameRequest(extra: HistoryItem[], last: string): boolean {
  if (extra.length === 0) return true;
  if (extra.length > 2) return false;
  return (
    extra[0].role === "user" && extra[0].text.trim() === last.trim() && (extra[1]?.role ?? "assistant") === "assistant"
  );
}

/** The lane holding `earlier`, if one does: found by the key its last user message was sent with. */
async function findLane(
  ctx: PlacementContext,
  channel: string,
  earlier: ChatTurn[],
  last: string,
): Promise<DoorLane | undefined> {
  let lastUser = -1;
  for (let i = earlier.length - 1; i >= 0 && lastUser < 0; i--) if (earlier[i].role === "user") lastUser = i;
  if (lastUser < 0) return undefined;
  const answers = earlier.slice(lastUser + 1);
  const keys = lastUser === 0 ? firstMessageKeys(earlier[0].text) : [conversationKey(earlier.slice(0, lastUser + 1))];
  let best: StoredMessage | undefined;
  for (const key of keys) {
    const message = await byKey(ctx, channel, key);
    if (!message || (best && best.ts > message.ts)) continue;
    if (await laneEndsWith(ctx, message, answers, last)) best = message;
  }
  return best && { chat_id: best.chat_id, thread_id: best.thread_id ?? null };
}

/** The first free key for a conversation's first message (a taken one belongs to another conversation). */
async function freeFirstKey(ctx: PlacementContext, channel: string, text: string): Promise<string> {
  const keys = firstMessageKeys(text);
  for (const key of keys) if (!(await byKey(ctx, channel, key))) return key;
  // Every slot taken: this conversation cannot be found by its first message; its next turn forks.
  return `${keys[0]}.${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
}

/** Places a conversation of a channel: a new thread, the thread it continues, or a fork of it. */
export async function placeConversation(
  ctx: PlacementContext,
  channel: string,
  earlier: ChatTurn[],
  last: string,
): Promise<Placement> {
  const flat: DoorLane = { chat_id: channel, thread_id: null };
  if (earlier.length === 0)
    return { lane: flat, newThread: true, key: await freeFirstKey(ctx, channel, last), imports: [] };
  const key = conversationKey([...earlier, { role: "user", text: last }]);
  // A repeat of this very request: its message is stored already, and the send joins it.
  const repeated = await byKey(ctx, channel, key);
  if (repeated)
    return {
      lane: { chat_id: repeated.chat_id, thread_id: repeated.thread_id ?? null },
      newThread: false,
      key,
      imports: [],
    };
  const found = await findLane(ctx, channel, earlier, last);
  if (found) return { lane: found, newThread: false, key, imports: [] };
  return { lane: flat, newThread: true, key, imports: earlier };
}
