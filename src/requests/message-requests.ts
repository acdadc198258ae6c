/**
 * `message.send` (echo, idempotency, auto-threading, slash commands, the turn) and
 * `message.delete` (docs/PROTOCOL.md §4).
 * @module
 */
import { deriveTitle, channelPayload, createdPayload } from "./channel-rules.js";
import { buildChannel, type ChannelServices, type Requester } from "./channel-requests.js";
import { parseCommand, type BuiltinCommand, type CommandHandler, type CommandRegistry, type CommandSource } from "../turn/commands.js";
import { GatewayError } from "../errors.js";
import type { ClientPayloads } from "../protocol/client-frames.js";
import type { ResolveLane } from "./channel-directory.js";
import type { ResolvedOptions } from "../options.js";
import type { AskServices } from "../asks/ask-services.js";
import { mediaTakenError } from "./media-attachment.js";
import { newId } from "../id-generator.js";
import type { Owner } from "../ids.js";
import type { LaneScheduler, LaneTurn } from "../turn/lanes.js";
import type { Channel, HistoryItem, MediaRef, StoredMessage } from "../contracts/records.js";
import type { AgentRuntime, CommandInput, RuntimeEvent, TurnInput } from "../contracts/runtime.js";
import type { StoredFrame } from "../protocol/protocol.js";
import type { Lane } from "../contracts/storage.js";
import { historyItem, messagePayload } from "../protocol/message-payloads.js";
import { runAnswer } from "../turn/turn.js";
import { answerByCommand } from "../asks/ask-answers.js";
import { isAskCommand } from "../asks/ask-commands.js";
import { laneModel } from "../asks/lane-model.js";
import { publishQueue, type AnswerWaiting, type QueueServices } from "./turn-queue.js";
import { stopTurn } from "./shared-state.js";
import { checkWhenBusy, markForStart, startTurn } from "./turn-start.js";
import { respondEcho } from "./stored-echo.js";

/** What the message handlers read and write through: the lane's turns run as answers, and may ask. */
export interface MessageServices extends QueueServices, ChannelServices {
  readonly options: AskServices["options"] & Pick<ResolvedOptions, "historyTurns">;
  readonly resolveLane: ResolveLane;
  readonly commands: CommandRegistry;
  readonly runtime: AgentRuntime;
  readonly lanes: LaneScheduler;
}

/** Sends in flight by idempotency key, so a retry racing its original waits for it. */
const pendingSends = new WeakMap<MessageServices, Map<string, Promise<StoredMessage>>>();

function pendingOf(hub: MessageServices): Map<string, Promise<StoredMessage>> {
  let map = pendingSends.get(hub);
  if (!map) {
    map = new Map();
    pendingSends.set(hub, map);
  }
  return map;
}

/** Handle `message.send`: store and echo the user message, then queue its turn. */
export async function sendMessage(hub: MessageServices, owner: Owner, payload: ClientPayloads["message.send"], requester: Requester): Promise<StoredMessage> {
  const resolved = await hub.resolveLane(owner, payload.chat_id, payload.thread_id);
  if (resolved.channel.automation || resolved.thread?.automation) {
    throw new GatewayError("unsupported", "this is an automation channel: it is read-only");
  }
  const text = payload.text ?? "";
  const refs = payload.media_refs ?? [];
  // Empty means "": whitespace is text a person chose to send (docs/PROTOCOL.md §4.1).
  if (text === "" && refs.length === 0) throw new GatewayError("unsupported", `field "text": empty text needs media_refs`);

  const key = payload.client_msg_id;
  if (key !== undefined) {
    const pendingKey = `${owner}\u0000${resolved.chat_id}\u0000${key}`;
    const pendings = pendingOf(hub);
    // Wait for the send of this key in flight here, if any; one that failed leaves the next to try.
    for (let pending = pendings.get(pendingKey); pending; pending = pendings.get(pendingKey)) {
      const earlier = await pending.catch(() => undefined);
      if (earlier) {
        await respondEcho(hub.storage, owner, earlier, key, requester);
        return earlier;
      }
    }
    // Registered before the look-up awaits, so retries arriving meanwhile wait for this one.
    const work = (async () => {
      const earlier = await hub.storage.findByClientMsgId(owner, resolved.chat_id, key);
      if (earlier) {
        await respondEcho(hub.storage, owner, earlier, key, requester);
        return earlier;
      }
      return storeAndStart(hub, owner, payload, resolved, text, refs, requester);
    })().catch(async (error) => {
      // Another process may have stored the same key first (a storage with a unique index rejects
      // the second write): answer with that message, as for any retry.
      const stored = await hub.storage.findByClientMsgId(owner, resolved.chat_id, key).catch(() => undefined);
      if (!stored) throw error;
      await respondEcho(hub.storage, owner, stored, key, requester);
      return stored;
    });
    pendings.set(pendingKey, work);
    // Before any waiter resumes, so none waits for a settled send again.
    void work.then(
      () => pendings.get(pendingKey) === work && pendings.delete(pendingKey),
      () => pendings.get(pendingKey) === work && pendings.delete(pendingKey),
    );
    return await work;
  }
  return storeAndStart(hub, owner, payload, resolved, text, refs, requester);
}

async function storeAndStart(
  hub: MessageServices,
  owner: Owner,
  payload: ClientPayloads["message.send"],
  resolved: Lane & { channel: Channel },
  text: string,
  refs: string[],
  requester: Requester,
): Promise<StoredMessage> {
  const media: MediaRef[] = [];
  if (new Set(refs).size !== refs.length) throw new GatewayError("unsupported", `field "media_refs": list each media_ref once`);
  for (const ref of refs) {
    const record = await hub.storage.getMedia(owner, ref);
    if (!record) throw new GatewayError("not_found", `unknown media_ref "${ref}": upload it and wait for media.upload.ack`);
    // Storage enforces this too (atomically); checking here answers before anything else happens.
    if (record.message_id !== undefined) throw mediaTakenError(ref);
    media.push({ media_id: record.media_id, kind: record.kind, mime: record.mime, size: record.size, filename: record.filename });
  }
  const command = parseCommand(text);
  const builtin = command && (await builtinOf(hub, command.name));
  const isStop = builtin === "/stop";
  // An answer to an ask acts beside the waiting turn (docs/PROTOCOL.md §11), like /stop.
  const askCommand = builtin && isAskCommand(builtin) ? builtin : undefined;
  if (!isStop && !askCommand) {
    hub.lanes.checkCapacity(owner);
    checkWhenBusy(hub, payload.when_busy);
  }

  let lane: Lane = { chat_id: resolved.chat_id, thread_id: resolved.thread_id };
  const frames: StoredFrame[] = [];
  const channels: Channel[] = [];
  let minted: Channel | undefined;
  // Auto-threading: only in a flat lane, with non-blank text that is not a slash command.
  if (payload.auto_thread === true && lane.thread_id === null && text.trim() !== "" && !command) {
    minted = await buildChannel(hub, owner, { name: deriveTitle(text) || "Thread", kind: "thread", parent_chat_id: lane.chat_id });
    channels.push(minted);
    frames.push({ type: "channel.created", payload: createdPayload(minted, true) });
    lane = { chat_id: lane.chat_id, thread_id: minted.chat_id };
  }
  const message: StoredMessage = {
    message_id: newId("m"),
    role: "user",
    text,
    reasoning: "",
    ts: hub.now(),
    media,
    chat_id: lane.chat_id,
    thread_id: lane.thread_id,
  };
  if (payload.reply_to) message.reply_to = payload.reply_to;
  if (payload.client_msg_id !== undefined) {
    message.client_msg_id = payload.client_msg_id;
    // Where its echo will be found again for a retry (docs/PROTOCOL.md §4.1).
    message.echo_after = (await hub.storage.outboxBounds(owner)).last;
  }
  const start = isStop || askCommand ? { steer: undefined } : markForStart(hub, owner, lane, message, payload.when_busy);
  frames.push({ type: "message", payload: messagePayload(message) });
  // Refused, with nothing stored, when a concurrent channel.delete took the chat or thread first.
  const requireChannels = resolved.thread_id === null ? [resolved.chat_id] : [resolved.chat_id, resolved.thread_id];
  const stored = await hub.store(owner, { channels, messages: [message], requireChannels }, frames, requester && { ...requester, frameIndex: frames.length - 1 });
  if (!stored.length) throw new GatewayError("not_found", `unknown chat_id "${payload.chat_id}"`);

  if (minted) void retitle(hub, owner, minted, text);
  if (askCommand) {
    const deviceId = (requester?.session as { device?: { device_id: string } } | undefined)?.device?.device_id ?? "";
    answerByCommand(hub, owner, lane, { name: askCommand, args: command!.args, replyTo: message.message_id, deviceId }).catch((error) =>
      hub.log.warn(`${askCommand} failed`, error),
    );
    return message;
  }
  if (isStop) {
    void stopLane(hub, owner, lane, message);
    return message;
  }
  await startTurn(hub, owner, lane, message, start.steer, answerWaiting(hub));
  return message;
}

/** `/stop`: the lane's running turn, in this process or (through the bus) another; else say so. */
async function stopLane(hub: MessageServices, owner: Owner, lane: Lane, message: StoredMessage): Promise<void> {
  if ((await stopTurn(hub, owner, lane)).stopped) return;
  hub.lanes.enqueue(owner, lane, (turn) => reply(hub, owner, lane, message, turn, "Nothing is running here."));
}

/** Runs the turn of a waiting user message: its command, or an agent turn. */
export function answerWaiting(hub: MessageServices): AnswerWaiting {
  return (owner, turn, message) => {
    const lane: Lane = { chat_id: message.chat_id, thread_id: message.thread_id };
    const command = parseCommand(message.text);
    return command ? runCommand(hub, owner, lane, message, turn, command.name, command.args) : runTurn(hub, owner, lane, message, turn).then(() => undefined);
  };
}

/** The gateway's own command the name runs, if no runtime or plugin command took it. */
async function builtinOf(hub: MessageServices, name: string): Promise<BuiltinCommand | undefined> {
  const source = await hub.commands.resolve(name);
  return source?.kind === "builtin" ? source.builtin : undefined;
}

/** True when the name runs the gateway's own `builtin`. */
async function isBuiltin(hub: MessageServices, name: string, builtin: BuiltinCommand): Promise<boolean> {
  return (await builtinOf(hub, name)) === builtin;
}

/** Ask the runtime for a better auto-thread title; keep the derived one when it has none. */
async function retitle(hub: MessageServices, owner: Owner, thread: Channel, text: string): Promise<void> {
  if (!hub.runtime.generateTitle) return;
  try {
    const title = (await hub.runtime.generateTitle(text, AbortSignal.timeout(30_000))).trim().replace(/\s+/g, " ").slice(0, 100);
    if (!title) return;
    const current = await hub.storage.getChannel(owner, thread.chat_id);
    if (!current) return;
    const next: Channel = { ...current, name: title };
    // Expecting the thread as read: a rename or deletion meanwhile wins over the generated title.
    await hub.store(owner, { channels: [next], expectChannels: [{ chat_id: current.chat_id, channel: current }] }, [{ type: "channel.renamed", payload: channelPayload(next) }]);
  } catch (error) {
    hub.log.warn("generating a thread title failed; the derived title stays", error);
  }
}

function turnInput(hub: MessageServices, owner: Owner, lane: Lane, message: StoredMessage, turn: LaneTurn, history: HistoryItem[], model: string | undefined): TurnInput {
  return {
    owner,
    chat_id: lane.chat_id,
    thread_id: lane.thread_id,
    message: { message_id: message.message_id, text: message.text, media: message.media },
    history,
    signal: turn.controller.signal,
    async readMedia(mediaId) {
      const store = hub.options.mediaStore;
      if (!store) throw new GatewayError("unsupported", "this gateway keeps no media");
      const chunks: Uint8Array[] = [];
      for await (const chunk of store.read(owner, mediaId)) chunks.push(chunk);
      return Buffer.concat(chunks);
    },
    ask: (request) => hub.asks.ask(owner, lane, turn, request),
    ...(model !== undefined ? { model } : {}),
  };
}

/** The lane's recent conversation for the runtime: no slash commands, nothing before the latest `/new`. */
async function laneHistory(hub: MessageServices, owner: Owner, lane: Lane, current: string): Promise<HistoryItem[]> {
  const wanted = hub.options.historyTurns;
  if (wanted <= 0) return [];
  const page = await hub.storage.history(owner, { ...lane, limit: Math.min(200, wanted * 2 + 1) });
  const messages = page?.messages ?? [];
  let start = 0;
  const commandIds = new Set<string>();
  // Whether a name resets is the registry's call (a runtime's own /new replaces the built-in).
  const resets = new Map<string, Promise<boolean>>();
  for (const [i, m] of messages.entries()) {
    const command = m.role === "user" ? parseCommand(m.text) : undefined;
    if (!command) continue;
    commandIds.add(m.message_id);
    if (!resets.has(command.name)) resets.set(command.name, isBuiltin(hub, command.name, "/new"));
    if (await resets.get(command.name)) start = i + 1;
  }
  return messages
    .slice(start)
    .filter((m) => m.message_id !== current && m.status !== "streaming" && !m.waiting && !commandIds.has(m.message_id) && !(m.reply_to && commandIds.has(m.reply_to)))
    .slice(-wanted)
    .map(historyItem);
}

/** Run the agent's turn answering a stored user message; resolves with the stored answer. */
export async function runTurn(hub: MessageServices, owner: Owner, lane: Lane, message: StoredMessage, turn: LaneTurn): Promise<StoredMessage> {
  const history = await laneHistory(hub, owner, lane, message.message_id);
  const model = await laneModel(hub, owner, lane);
  const input = turnInput(hub, owner, lane, message, turn, history, model);
  return await runAnswer(hub, { owner, lane, replyTo: message.message_id, turn, model: model ?? hub.runtime.model, events: () => hub.runtime.turn(input) });
}

async function* textEvents(text: string): AsyncIterable<RuntimeEvent> {
  yield { type: "text", delta: text };
}

async function reply(hub: MessageServices, owner: Owner, lane: Lane, message: StoredMessage, turn: LaneTurn, text: string): Promise<void> {
  await runAnswer(hub, { owner, lane, replyTo: message.message_id, turn, push: false, events: () => textEvents(text) });
}

async function runCommand(hub: MessageServices, owner: Owner, lane: Lane, message: StoredMessage, turn: LaneTurn, name: string, args: string): Promise<void> {
  const source: CommandSource | undefined = await hub.commands.resolve(name);
  if (!source) {
    await reply(hub, owner, lane, message, turn, `Unknown command ${name}. Type /help for the list.`);
    return;
  }
  const canonical = source.entry.name;
  if (source.kind === "builtin") {
    if (source.builtin === "/help") {
      const lines = (await hub.commands.catalog()).map((c) => `${c.name}${c.args_hint ? ` ${c.args_hint}` : ""} — ${c.description}`);
      await reply(hub, owner, lane, message, turn, `Commands:\n${lines.join("\n")}`);
    } else if (source.builtin === "/new") {
      await reply(hub, owner, lane, message, turn, "Started a fresh context: earlier messages here are no longer sent to the agent.");
    } else {
      await reply(hub, owner, lane, message, turn, `${canonical} cannot be used here.`);
    }
    return;
  }
  const history = await laneHistory(hub, owner, lane, message.message_id);
  const input: CommandInput = { ...turnInput(hub, owner, lane, message, turn, history, await laneModel(hub, owner, lane)), command: canonical, args };
  if (source.kind === "runtime") {
    const run = hub.runtime.command;
    const events = run ? () => run.call(hub.runtime, input) : () => textEvents(`${canonical} is listed by the agent but it has no command handler.`);
    await runAnswer(hub, { owner, lane, replyTo: message.message_id, turn, push: false, events });
    return;
  }
  const handler = source.handler;
  await runAnswer(hub, {
    owner,
    lane,
    replyTo: message.message_id,
    turn,
    push: false,
    events: () => pluginEvents(handler(input)),
  });
}

async function* pluginEvents(result: ReturnType<CommandHandler>): AsyncIterable<RuntimeEvent> {
  const value = await result;
  if (value && typeof value === "object" && Symbol.asyncIterator in value) {
    yield* value as AsyncIterable<RuntimeEvent>;
  } else if (typeof value === "string" && value) {
    yield { type: "text", delta: value };
  }
}

/** Handle `message.delete`: every id must be in the lane, else nothing is deleted. */
export async function deleteMessages(hub: MessageServices, owner: Owner, payload: ClientPayloads["message.delete"], requester: Requester): Promise<void> {
  const lane = await hub.resolveLane(owner, payload.chat_id, payload.thread_id);
  if (payload.message_ids.length === 0) throw new GatewayError("unsupported", `field "message_ids": list at least one id`);
  const ids = [...new Set(payload.message_ids)];
  let waiting = false;
  for (const id of ids) {
    const message = await hub.storage.getMessage(owner, id);
    if (!message || message.chat_id !== lane.chat_id || message.thread_id !== lane.thread_id) {
      throw new GatewayError("not_found", `unknown message_id "${id}" in this lane`);
    }
    waiting ||= message.waiting === true;
  }
  // Before the delete is stored: from here on the turn sends and stores nothing of its answer.
  hub.lanes.dropAnswer(owner, lane, ids);
  await hub.store(
    owner,
    { deleteMessages: ids },
    [{ type: "message.deleted", payload: { chat_id: lane.chat_id, thread_id: lane.thread_id, message_ids: ids } }],
    requester,
  );
  // A waiting message deleted leaves the lane's queue: its turn never runs (docs/PROTOCOL.md §14.4).
  if (waiting) void publishQueue(hub, owner, { chat_id: lane.chat_id, thread_id: lane.thread_id });
}

