/**
 * Running the turn of a stored user message: its command (the gateway's, a plugin's or the
 * runtime's), or the agent's turn with the lane's recent history and chosen model.
 * @module
 */
import {
  parseCommand,
  type BuiltinCommand,
  type CommandHandler,
  type CommandRegistry,
  type CommandSource,
} from "../turn/commands.js";
import { GatewayError } from "../protocol/errors.js";
import type { ResolvedOptions } from "../options/options.js";
import type { AskServices } from "../asks/ask-services.js";
import type { Owner } from "../protocol/ids.js";
import type { LaneTurn } from "../turn/lane-turn.js";
import type { HistoryItem, StoredMessage } from "../contracts/records.js";
import type { AgentRuntime, CommandInput, RuntimeEvent, TurnInput } from "../contracts/runtime.js";
import type { Lane } from "../contracts/storage.js";
import { historyItem } from "../outbox/message-payloads.js";
import { runAnswer } from "../turn/turn.js";
import { laneModel } from "../asks/lane-model.js";
import type { AnswerWaiting, QueueServices } from "./queue.js";

/** What running a message's turn reads: the runtime, the commands, the lane's history. */
export interface RunServices extends QueueServices {
  readonly options: AskServices["options"] & Pick<ResolvedOptions, "historyTurns">;
  readonly commands: CommandRegistry;
  readonly runtime: AgentRuntime;
}

/** Runs the turn of a waiting user message: its command, or an agent turn. */
export function answerWaiting(services: RunServices): AnswerWaiting {
  return (owner, turn, message) => {
    const lane: Lane = { chat_id: message.chat_id, thread_id: message.thread_id };
    const command = parseCommand(message.text);
    return command
      ? runCommand(services, owner, lane, message, turn, command.name, command.args)
      : runTurn(services, owner, lane, message, turn).then(() => undefined);
  };
}

/** The gateway's own command the name runs, if no runtime or plugin command took it. */
export async function builtinOf(services: RunServices, name: string): Promise<BuiltinCommand | undefined> {
  const source = await services.commands.resolve(name);
  return source?.kind === "builtin" ? source.builtin : undefined;
}

/** True when the name runs the gateway's own `builtin`. */
async function isBuiltin(services: RunServices, name: string, builtin: BuiltinCommand): Promise<boolean> {
  return (await builtinOf(services, name)) === builtin;
}

function turnInput(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  turn: LaneTurn,
  history: HistoryItem[],
  model: string | undefined,
): TurnInput {
  return {
    owner,
    chat_id: lane.chat_id,
    thread_id: lane.thread_id,
    message: { message_id: message.message_id, text: message.text, media: message.media },
    history,
    signal: turn.controller.signal,
    async readMedia(mediaId) {
      const store = services.options.mediaStore;
      if (!store) throw new GatewayError("unsupported", "this gateway keeps no media");
      const chunks: Uint8Array[] = [];
      for await (const chunk of store.read(owner, mediaId)) chunks.push(chunk);
      return Buffer.concat(chunks);
    },
    ask: (request) => services.asks.ask(owner, lane, turn, request),
    ...(model !== undefined ? { model } : {}),
  };
}

/** The lane's recent conversation for the runtime: no slash commands, nothing before the latest `/new`. */
async function laneHistory(services: RunServices, owner: Owner, lane: Lane, current: string): Promise<HistoryItem[]> {
  const wanted = services.options.historyTurns;
  if (wanted <= 0) return [];
  const page = await services.storage.history(owner, { ...lane, limit: Math.min(200, wanted * 2 + 1) });
  const messages = page?.messages ?? [];
  let start = 0;
  const commandIds = new Set<string>();
  // Whether a name resets is the registry's call (a runtime's own /new replaces the built-in).
  const resets = new Map<string, Promise<boolean>>();
  for (const [i, m] of messages.entries()) {
    const command = m.role === "user" ? parseCommand(m.text) : undefined;
    if (!command) continue;
    commandIds.add(m.message_id);
    if (!resets.has(command.name)) resets.set(command.name, isBuiltin(services, command.name, "/new"));
    if (await resets.get(command.name)) start = i + 1;
  }
  return messages
    .slice(start)
    .filter(
      (m) =>
        m.message_id !== current &&
        m.status !== "streaming" &&
        !m.waiting &&
        !commandIds.has(m.message_id) &&
        !(m.reply_to && commandIds.has(m.reply_to)),
    )
    .slice(-wanted)
    .map(historyItem);
}

/** Run the agent's turn answering a stored user message; resolves with the stored answer. */
export async function runTurn(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  turn: LaneTurn,
): Promise<StoredMessage> {
  const history = await laneHistory(services, owner, lane, message.message_id);
  const model = await laneModel(services, owner, lane);
  const input = turnInput(services, owner, lane, message, turn, history, model);
  return await runAnswer(services, {
    owner,
    lane,
    replyTo: message.message_id,
    turn,
    model: model ?? services.runtime.model,
    events: () => services.runtime.turn(input),
  });
}

async function* textEvents(text: string): AsyncIterable<RuntimeEvent> {
  yield { type: "text", delta: text };
}

export async function reply(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  turn: LaneTurn,
  text: string,
): Promise<void> {
  await runAnswer(services, {
    owner,
    lane,
    replyTo: message.message_id,
    turn,
    push: false,
    events: () => textEvents(text),
  });
}

async function runCommand(
  services: RunServices,
  owner: Owner,
  lane: Lane,
  message: StoredMessage,
  turn: LaneTurn,
  name: string,
  args: string,
): Promise<void> {
  const source: CommandSource | undefined = await services.commands.resolve(name);
  if (!source) {
    await reply(services, owner, lane, message, turn, `Unknown command ${name}. Type /help for the list.`);
    return;
  }
  const canonical = source.entry.name;
  if (source.kind === "builtin") {
    if (source.builtin === "/help") {
      const lines = (await services.commands.catalog()).map(
        (c) => `${c.name}${c.args_hint ? ` ${c.args_hint}` : ""} — ${c.description}`,
      );
      await reply(services, owner, lane, message, turn, `Commands:\n${lines.join("\n")}`);
    } else if (source.builtin === "/new") {
      await reply(
        services,
        owner,
        lane,
        message,
        turn,
        "Started a fresh context: earlier messages here are no longer sent to the agent.",
      );
    } else {
      await reply(services, owner, lane, message, turn, `${canonical} cannot be used here.`);
    }
    return;
  }
  const history = await laneHistory(services, owner, lane, message.message_id);
  const input: CommandInput = {
    ...turnInput(services, owner, lane, message, turn, history, await laneModel(services, owner, lane)),
    command: canonical,
    args,
  };
  if (source.kind === "runtime") {
    const run = services.runtime.command;
    const events = run
      ? () => run.call(services.runtime, input)
      : () => textEvents(`${canonical} is listed by the agent but it has no command handler.`);
    await runAnswer(services, { owner, lane, replyTo: message.message_id, turn, push: false, events });
    return;
  }
  const handler = source.handler;
  await runAnswer(services, {
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
