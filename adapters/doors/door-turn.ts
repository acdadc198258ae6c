/**
 * A door's turn: the request's message sent as its device, and the answer followed until it ends
 * or the client goes (docs/PROTOCOL.md §19). A client that goes does not stop the turn.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { AnswerFollower, type AnswerEvent } from "./answer-follower.js";
import type { ChatTurn } from "./chat-input.js";
import { channelOfModel } from "./channel-models.js";
import { placeConversation, type DoorLane } from "./conversation-lane.js";
import type { DoorContext } from "./door-context.js";
import { uploadImages, type DoorImage } from "./door-images.js";
import { openDoorSession, type DoorSession } from "./door-session.js";

/** A door request's turn in the making: its context and its device. */
export interface DoorTurn {
  ctx: DoorContext;
  session: DoorSession;
}

/** The user message a door sent (or found sent before), and its lane. */
export interface SentMessage {
  messageId: string;
  lane: DoorLane;
  /** When the message was stored, epoch ms, when the door sent it. */
  ts?: number;
  /** The echo's outbox `seq`: past the device's hello cursor, the message is newer than the device. */
  seq?: number;
}

/** A thread's name for a forked conversation: its first user words. */
function forkName(turns: ChatTurn[]): string {
  const first =
    turns
      .find((t) => t.role === "user")
      ?.text.trim()
      .split("\n")[0] ?? "";
  return first.slice(0, 100).trim() || "Conversation";
}

/** What a door sends: the user's text and the images that go with it. */
export interface Outgoing {
  text: string;
  images: readonly DoorImage[];
}

/**
 * Sends a message into a lane as the door's device, with `key` as its `client_msg_id`, its images
 * uploaded first as the device's media. `newThread` makes a thread of the lane's channel first:
 * holding `imports` when there are any, else by auto-threading the send.
 */
export async function sendInto(
  turn: DoorTurn,
  lane: DoorLane,
  message: Outgoing,
  key: string | undefined,
  fresh: { newThread: boolean; imports: ChatTurn[] } = { newThread: false, imports: [] },
): Promise<SentMessage> {
  const { ctx, session } = turn;
  let where = lane;
  if (fresh.newThread && fresh.imports.length > 0) {
    const created = await session.device.request("channel.create", {
      name: forkName(fresh.imports),
      kind: "thread",
      parent_chat_id: lane.chat_id,
    });
    where = { chat_id: lane.chat_id, thread_id: created.payload.chat_id as string };
    await ctx.gateway.importMessages(session.owner, where, fresh.imports);
  }
  // A repeat of a stored message sends nothing new: its images are not uploaded a second time.
  const repeat =
    message.images.length > 0 &&
    key !== undefined &&
    (await ctx.storage.findByClientMsgId?.(session.owner, where.chat_id, key)) != null;
  const media = repeat ? [] : await uploadImages(session.device, message.images);
  const echo = await session.device.request("message.send", {
    chat_id: where.chat_id,
    thread_id: where.thread_id,
    text: message.text,
    ...(media.length > 0 ? { media_refs: media } : {}),
    ...(key !== undefined ? { client_msg_id: key } : {}),
    ...(fresh.newThread && fresh.imports.length === 0 ? { auto_thread: true } : {}),
  });
  const p = echo.payload;
  // The same fork sent at once through another process: its thread got the message (the key is
  // the channel's), so this one holds only the copies; it goes, and the conversation stays one.
  if (where !== lane && p.thread_id !== where.thread_id)
    await session.device.request("channel.delete", { chat_id: where.thread_id as string }).catch(() => undefined);
  return {
    messageId: p.message_id as string,
    lane: { chat_id: p.chat_id as string, thread_id: (p.thread_id as string | null) ?? null },
    ...(typeof p.ts === "number" ? { ts: p.ts } : {}),
    ...(typeof echo.seq === "number" ? { seq: echo.seq } : {}),
  };
}

/**
 * Sends a stateless client's last message where its conversation is: a new thread, the thread
 * it continues (a repeat is the gateway's idempotent retry), or a fork holding the earlier ones.
 */
export async function sendConversation(
  turn: DoorTurn,
  model: string,
  earlier: ChatTurn[],
  last: Outgoing,
): Promise<SentMessage> {
  const { ctx, session } = turn;
  const channel = await channelOfModel({ storage: ctx.storage, owner: session.owner }, model);
  const placement = await placeConversation(
    { storage: ctx.storage, owner: session.owner, device: session.device },
    channel,
    earlier,
    last.text,
  );
  return sendInto(turn, placement.lane, last, placement.key, placement);
}

interface HistoryItem {
  message_id: string;
  role: string;
  text: string;
  reasoning: string;
  status?: string;
  reply_to?: string;
  tokens?: number;
  model?: string;
}

/** An answer that ended before the door looked (a repeated request): read from history. */
async function endFromHistory(session: DoorSession, sent: SentMessage, follower: AnswerFollower): Promise<void> {
  const page = await session.device.request("history", { ...sent.lane, limit: 50 });
  const items = (page.payload.messages ?? []) as HistoryItem[];
  const answer = items.find((m) => m.role === "assistant" && m.reply_to === sent.messageId);
  if (!answer || answer.status === "streaming") return;
  follower.endWith({
    messageId: answer.message_id,
    status: answer.status ?? "complete",
    text: answer.text,
    reasoning: answer.reasoning,
    ...(answer.tokens !== undefined ? { tokens: answer.tokens } : {}),
    ...(answer.model !== undefined ? { model: answer.model } : {}),
  });
}

/**
 * Opens the request's device (with `caps.media` when it uploads images), runs `start` (which sends
 * and says how to answer, or answers and resolves undefined), and passes the answer's events on
 * until it ends, the device closes, the client goes, or `maxWaitMs` passes.
 */
export async function followAnswer(
  ctx: DoorContext,
  req: IncomingMessage,
  res: ServerResponse,
  door: string,
  start: (turn: DoorTurn) => Promise<{ sent: SentMessage; emit: (event: AnswerEvent) => void } | undefined>,
  options: { media?: boolean } = {},
): Promise<void> {
  let emit: (event: AnswerEvent) => void = () => undefined;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const follower = new AnswerFollower((event) => {
    emit(event);
    if (event.type === "end" || event.type === "gone") finish();
  });
  const session = await openDoorSession(ctx, req, door, (frame) => follower.handle(frame), options.media);
  const clientGone = () => finish();
  res.once("close", clientGone);
  const timer = setTimeout(
    () => follower.fail("the answer took too long; it goes on and lands in history"),
    ctx.maxWaitMs,
  );
  try {
    const started = await start({ ctx, session });
    // Nothing to follow (the door answered already).
    if (started === undefined) return;
    emit = started.emit;
    session.device.onClose((error) => follower.fail(error.message));
    follower.follow(started.sent.messageId, started.sent.lane);
    // Stored after the hello, the message's answer reaches the device frame by frame: nothing of it
    // can have ended unseen. Only an older message (a repeat) may have an answer that ended before.
    const newer = started.sent.seq !== undefined && started.sent.seq > session.device.cursor;
    if (!follower.seen && !newer) await endFromHistory(session, started.sent, follower);
    await finished;
  } finally {
    clearTimeout(timer);
    res.off("close", clientGone);
    session.device.close();
  }
}
