/**
 * The `AgentRuntime` contract: the one thing a binding to an agent implements. The gateway owns
 * the protocol (frames, ids, storage, fan-out); a runtime only turns a user message into a stream
 * of {@link RuntimeEvent}s.
 * @module
 */
import type { ChatId, MessageId, Owner } from "../ids.js";
import type { CommandEntry, HistoryItem, MediaKind, MediaRef } from "./records.js";

/** Text arrived: append `delta` to the answer. */
export interface TextEvent {
  type: "text";
  delta: string;
}

/** Reasoning arrived: append `delta` to the reasoning. */
export interface ReasoningEvent {
  type: "reasoning";
  delta: string;
}

/** An intermediate assistant beat ("Looking that up…"), shown apart from the answer. */
export interface CommentaryEvent {
  type: "commentary";
  text: string;
}

/** A tool call begins. */
export interface ToolStartEvent {
  type: "tool-start";
  /** The runtime's id for the call, used to match its `tool-end`. Optional when calls never overlap. */
  id?: string;
  name: string;
  /** The full arguments (tool progress is always verbose). */
  args: Record<string, unknown>;
  /** One-line human summary; the gateway derives one from `args` when absent. */
  preview?: string;
}

/** A tool call completed. */
export interface ToolEndEvent {
  type: "tool-end";
  /** Matches the `id` of its `tool-start`; without it, the latest open call of that `name` (or the latest open call) ends. */
  id?: string;
  name?: string;
  /** The tool's result, as text or any JSON value. */
  output: unknown;
  /** False when the tool failed; the turn goes on. */
  ok: boolean;
  /** Seconds; measured by the gateway when absent. */
  duration?: number;
}

/**
 * Usage and metadata of the model call(s). May come several times (one per step); later values
 * replace earlier ones, except `cost` and token counts, which the runtime reports as totals.
 */
export interface UsageEvent {
  type: "usage";
  /** Model id as the provider names it; the gateway drops the vendor prefix. */
  model?: string;
  /** Prompt tokens of the last call (used for `context_pct`). */
  promptTokens?: number;
  completionTokens?: number;
  /** Total tokens of the turn (the message's `tokens`). */
  totalTokens?: number;
  /** Context window of the model, tokens; overrides the gateway's configured window. */
  contextWindow?: number;
  /** Cost of the turn so far, USD. */
  cost?: number;
  /** Working directory of the agent (absolute; the gateway makes it home-relative). */
  cwd?: string;
}

/** The runtime attaches a file to its answer. */
export interface MediaEvent {
  type: "media";
  kind: MediaKind;
  mime: string;
  filename: string;
  data: Uint8Array;
}

/** The turn is over. Optional: the end of the iterable means the same. */
export interface DoneEvent {
  type: "done";
}

/** Everything a turn can yield. */
export type RuntimeEvent =
  | TextEvent
  | ReasoningEvent
  | CommentaryEvent
  | ToolStartEvent
  | ToolEndEvent
  | UsageEvent
  | MediaEvent
  | DoneEvent;

/** What a turn receives. */
export interface TurnInput {
  owner: Owner;
  /** The channel. */
  chat_id: ChatId;
  /** The thread, or null in the flat lane. */
  thread_id: ChatId | null;
  /** The user message that started the turn. */
  message: {
    message_id: MessageId;
    text: string;
    media: MediaRef[];
  };
  /**
   * Earlier messages of the lane, oldest first, without the current one; at most the gateway's
   * `historyTurns` setting, and none from before the lane's latest `/new`.
   */
  history: HistoryItem[];
  /** Aborted by `/stop` or by the turn timeout; the runtime should stop promptly. */
  signal: AbortSignal;
  /** Reads the bytes of one of the message's media. */
  readMedia(mediaId: string): Promise<Uint8Array>;
}

/** What a slash command receives: the turn input plus the parsed command. */
export interface CommandInput extends TurnInput {
  /** Canonical command name with its slash, as listed in the catalog (aliases resolved). */
  command: string;
  /** The text after the command name, trimmed. */
  args: string;
}

/**
 * An agent the gateway talks to.
 *
 * `turn` is called once per user message, one at a time per lane. It returns an async iterable of
 * events; the gateway turns them into frames. Throwing (or an iterable that throws) ends the turn
 * with an assistant message that says so; it never crashes the gateway. When `signal` aborts, stop
 * yielding soon: the gateway ends the turn with what it has.
 */
export interface AgentRuntime {
  /**
   * The model this runtime answers with, when it is known before a turn starts (a vendor prefix is
   * dropped). A turn's `message.start`, updates and final frame carry it; a `usage` event's
   * `model` replaces it for that turn. Absent: the model is known once the runtime reports usage.
   */
  readonly model?: string;
  /** Run one turn. */
  turn(input: TurnInput): AsyncIterable<RuntimeEvent>;
  /** The runtime's gateway-available slash commands, for `commands.catalog`. */
  commands?(): CommandEntry[] | Promise<CommandEntry[]>;
  /** Run one of the runtime's own slash commands (one listed by `commands()`). */
  command?(input: CommandInput): AsyncIterable<RuntimeEvent>;
  /** A short title for an auto-thread, from its first message. Without it, the derived title stays. */
  generateTitle?(text: string, signal: AbortSignal): Promise<string>;
}
