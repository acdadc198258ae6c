/**
 * The `AgentRuntime` contract: the one thing a binding to an agent implements. The gateway owns
 * the protocol (frames, ids, storage, fan-out); a runtime only turns a user message into a stream
 * of {@link RuntimeEvent}s.
 * @module
 */
import type { ChatId, MediaId, MessageId, Owner } from "../protocol/ids.js";
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

/** One choice offered by an ask. */
export interface AskOption {
  id: string;
  label: string;
}

/** Fields every ask shares. */
interface AskBase {
  /** Shown as the card's heading and the notification's title. */
  title: string;
  /** Longer text: the question, or what the action does. */
  body?: string;
  /** How long the person has; the gateway's default (10 minutes) when absent. */
  expiresInMs?: number;
  /**
   * The `confirm_in_app` mark (docs/PROTOCOL.md §21): answered only in the app, after reading
   * the card. Its push gets no action buttons and only opens the app. Default false.
   */
  confirmInApp?: boolean;
}

/** Approve or deny an action, usually a tool call (docs/PROTOCOL.md §11, `picker.approval`). */
export interface ApprovalAsk extends AskBase {
  kind: "approval";
  /** The tool call waiting for approval, shown with its full arguments. */
  tool?: { name: string; args: Record<string, unknown> };
  /** Defaults to `approve` and `deny`. */
  options?: AskOption[];
}

/**
 * Which tool calls wait for the person's approval (an {@link ApprovalAsk}) before they run: the
 * names of the tools, or a function of the tool's name and the call's arguments that returns true
 * for a call that must be approved. The `needsApproval` option of both runtime bindings
 * (`chat-gateway/runtime/openai-compatible`, `chat-gateway/runtime/ai-sdk`) takes it, and a runtime
 * of your own may take the same.
 *
 * @example
 * ```ts
 * const byName: ToolApproval = ["delete_file", "send_email"];
 * const byArgs: ToolApproval = (name, args) => name === "shell" && !String(args.command).startsWith("ls");
 * ```
 */
export type ToolApproval =
  | readonly string[]
  | ((toolName: string, args: Record<string, unknown>) => boolean | Promise<boolean>);

/** A question, a clarification when `allowText` is true (docs/PROTOCOL.md §11, `picker.confirm`). */
export interface ConfirmAsk extends AskBase {
  kind: "confirm";
  options?: AskOption[];
  /** The person may answer in their own words. */
  allowText?: boolean;
}

/** Choose the model for this lane from now on (docs/PROTOCOL.md §11, `picker.model`). */
export interface ModelAsk extends Omit<AskBase, "body"> {
  kind: "model";
  models: { id: string; label: string; current?: boolean }[];
}

/** What a runtime may ask the person during a turn. */
export type Ask = ApprovalAsk | ConfirmAsk | ModelAsk;

/**
 * How an ask ended. `selected` carries the person's `option_id` and/or `text`; `expired`,
 * `cancelled` (`/stop`, the message deleted) and `interrupted` (the gateway stopped) carry
 * neither. An approval that did not end in `approve` is a denial.
 */
export interface AskAnswer {
  outcome: "selected" | "expired" | "cancelled" | "interrupted";
  option_id?: string;
  text?: string;
}

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
  readMedia(mediaId: MediaId): Promise<Uint8Array>;
  /**
   * Asks the person and waits for the answer from any of their devices (docs/PROTOCOL.md §11).
   * The turn's typing indicator and idle timeout pause meanwhile. Resolves, never rejects, when
   * the ask expires, is cancelled or the gateway stops; `signal` still ends the turn.
   */
  ask(request: Ask): Promise<AskAnswer>;
  /** The model the person chose for this lane with `picker.model` or `/model`, if any. */
  model?: string;
}

/** One completion of a typed slash command (`commands.complete`, docs/PROTOCOL.md §11). */
export interface Completion {
  /** The whole completed line, e.g. `/model demo-fast`. */
  value: string;
  description: string;
}

/** What the runtime's completer receives. */
export interface CompleteInput {
  owner: Owner;
  chat_id: ChatId;
  thread_id: ChatId | null;
  /** The line typed so far; it starts with a slash. */
  text: string;
  /** Aborted when the gateway stops waiting (after 2 seconds). */
  signal: AbortSignal;
}

/** A model the runtime can answer with. */
export interface ModelChoice {
  id: string;
  label: string;
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
  /**
   * The models a person may choose between (for `/model` completion). Ask with a `model` ask to
   * let them choose; the choice comes back as `TurnInput.model` on later turns of the lane.
   */
  models?(): ModelChoice[] | Promise<ModelChoice[]>;
  /**
   * Completions of a typed slash command that the gateway does not complete itself (its own
   * commands are `/help`, `/stop`, `/new`, `/approve`, `/deny`, `/answer`, `/model`). At most 50
   * are used; a completer that throws or takes longer than 2 seconds gives none.
   */
  complete?(input: CompleteInput): Completion[] | Promise<Completion[]>;
  /** A short title for an auto-thread, from its first message. Without it, the derived title stays. */
  generateTitle?(text: string, signal: AbortSignal): Promise<string>;
  /**
   * Take a message sent with `when_busy: "steer"` into the lane's running turn
   * (docs/PROTOCOL.md §14.4): hand its text to that turn before its next model call. Resolve true when the turn took
   * it; the turn then answers it, with one more model call when it would otherwise end without one.
   * Resolve false when the turn will make no more calls (it is ending): the message gets a turn of
   * its own, queued. Without it, `when_busy: "steer"` is refused `unsupported`.
   */
  steer?(input: SteerInput): boolean | Promise<boolean>;
}

/** A message for a running turn (see {@link AgentRuntime.steer}). */
export interface SteerInput {
  owner: Owner;
  chat_id: ChatId;
  thread_id: ChatId | null;
  /** The user message the running turn answers (its `TurnInput.message.message_id`). */
  turn_message_id: MessageId;
  /** The steering message, stored and echoed like any user message. */
  message: TurnInput["message"];
}
