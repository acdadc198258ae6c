/**
 * Folds a runtime's events into the answer: text and reasoning (within the answer's size limit),
 * commentary and tool progress sent live, usage noted for the footer, media stored and offered.
 * @module
 */
import { createHash } from "node:crypto";
import type { TurnServices } from "./turn-services.js";
import { newId } from "../support/id-generator.js";
import type { Owner } from "../protocol/ids.js";
import type { MediaRecord, MediaRef, StoredMessage, ToolCall } from "../contracts/records.js";
import type { MediaEvent, RuntimeEvent, ToolEndEvent, ToolStartEvent, UsageEvent } from "../contracts/runtime.js";
import { bareModelId, mergeUsage } from "./runtime-info.js";
import type { AnswerLimits } from "./turn-limits.js";
import type { AnswerUpdates } from "./answer-updates.js";
import { ToolCallLog } from "./tool-calls.js";
import { clip } from "../support/clip.js";
import type { ServerFrame } from "../protocol/protocol.js";
import type { ServerPayloads } from "../protocol/server-frames.js";

type AnswerFrameType = "commentary" | "tool.start" | "tool.end";
type LaneFields = "message_id" | "chat_id" | "thread_id";
/** A live frame of the answer as the recorder words it: its own fields, typed by the protocol. */
type LiveAnswerFrame = {
  [T in AnswerFrameType]: { type: T; payload: Omit<ServerPayloads[T], LaneFields> };
}[AnswerFrameType];

/** The longest tool name and runtime-given preview kept (characters); longer ones end in "…". */
const NAME_MAX = 128;
const PREVIEW_MAX = 120;

function previewOf(args: Record<string, unknown>): string {
  let text: string;
  try {
    text = JSON.stringify(args) ?? "";
  } catch {
    text = "";
  }
  return clip(text, PREVIEW_MAX);
}

/**
 * Copy what the runtime reported of its model and token count onto the message (the footer
 * rule: streaming frames and history carry them). True when something changed.
 */
export function noteUsage(message: StoredMessage, usage: Omit<UsageEvent, "type">): boolean {
  const { model, tokens } = message;
  if (usage.model) message.model = bareModelId(usage.model) || message.model;
  if (usage.totalTokens !== undefined) message.tokens = usage.totalTokens;
  else if (usage.promptTokens !== undefined || usage.completionTokens !== undefined) {
    message.tokens = (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0);
  }
  return message.model !== model || message.tokens !== tokens;
}

interface OpenTool {
  id?: string;
  name: string;
  index: number;
  started: number;
}

/** The events of one answer, folded into its message. */
export class AnswerRecorder {
  /** Usage as reported so far (the runtime footer is built from it). */
  readonly usage: Omit<UsageEvent, "type">;
  /** Media the answer attached, offered with the final frame. */
  readonly offers: MediaRef[] = [];
  readonly #services: TurnServices;
  readonly #owner: Owner;
  readonly #message: StoredMessage;
  readonly #limits: AnswerLimits;
  readonly #updates: AnswerUpdates;
  #toolIndex = 0;
  readonly #openTools: OpenTool[] = [];
  readonly #toolLog = new ToolCallLog();

  constructor(
    services: TurnServices,
    owner: Owner,
    message: StoredMessage,
    parts: { limits: AnswerLimits; updates: AnswerUpdates; model?: string },
  ) {
    this.#services = services;
    this.#owner = owner;
    this.#message = message;
    this.#limits = parts.limits;
    this.#updates = parts.updates;
    this.usage = parts.model ? { model: parts.model } : {};
    noteUsage(message, this.usage);
  }

  /** The tool calls still running, as stored on the message. */
  runningTools(): ToolCall[] {
    const open = new Set(this.#openTools.map((t) => t.index));
    return (this.#message.tools ?? []).filter((t) => open.has(t.index));
  }

  /** Apply one event. Rejects only when storing media fails (the turn then fails). */
  async record(event: RuntimeEvent): Promise<void> {
    const message = this.#message;
    switch (event.type) {
      case "text":
        message.text += this.#limits.fit(message.text.length + message.reasoning.length, event.delta);
        this.#updates.schedule();
        break;
      case "reasoning":
        message.reasoning += this.#limits.fit(message.text.length + message.reasoning.length, event.delta);
        this.#updates.schedule();
        break;
      case "commentary":
        this.#live({ type: "commentary", payload: { text: event.text } });
        break;
      case "tool-start":
        this.#toolStart(event);
        break;
      case "tool-end":
        this.#toolEnd(event);
        break;
      case "usage":
        mergeUsage(this.usage, event);
        // Known from now on: on the next update, on checkpoints (history while streaming) and the stop.
        if (noteUsage(message, this.usage)) this.#updates.schedule();
        break;
      case "media":
        await this.#storeMedia(event);
        break;
      case "done":
        break;
    }
  }

  /** A live frame of this answer: its lane and message, after the frame's own fields. */
  #live(frame: LiveAnswerFrame): void {
    const { message_id, chat_id, thread_id } = this.#message;
    // The fields were checked against their frame type above; adding the lane keeps them so, which
    // the compiler cannot follow through a spread over the union.
    this.#services.live(this.#owner, {
      ...frame,
      payload: { ...frame.payload, message_id, chat_id, thread_id },
    } as ServerFrame);
  }

  #toolStart(event: ToolStartEvent): void {
    const index = this.#toolIndex++;
    const args = event.args ?? {};
    const name = clip(event.name, NAME_MAX);
    const preview = event.preview === undefined ? previewOf(args) : clip(event.preview, PREVIEW_MAX);
    const stored = this.#toolLog.start(index, name, preview, args);
    // Not shown live either: devices and the stored answer keep the same calls.
    if (!stored) return this.#limits.toolsFull();
    this.#openTools.push({ id: event.id, name, index, started: this.#services.now() });
    this.#message.tools ??= [];
    this.#message.tools.push(stored);
    // Live as stored (cut arguments as the runtimes' history carries them, docs/PROTOCOL.md §14.1):
    // the model server is not trusted with the size of a frame to every device.
    const shown = typeof stored.args === "string" ? { truncated_arguments: stored.args } : stored.args;
    this.#live({ type: "tool.start", payload: { index, name, preview, args: shown } });
  }

  #toolEnd(event: ToolEndEvent): void {
    const tools = this.#openTools;
    let at = event.id !== undefined ? tools.findIndex((t) => t.id === event.id) : -1;
    if (at === -1 && event.name !== undefined) at = tools.findLastIndex((t) => t.name === event.name);
    if (at === -1) at = tools.length - 1;
    const open = at >= 0 ? tools.splice(at, 1)[0] : undefined;
    const index = open?.index ?? this.#toolIndex++;
    const name = clip(event.name ?? open?.name ?? "", NAME_MAX);
    const output = event.output === undefined ? null : event.output;
    const duration = event.duration ?? (open ? (this.#services.now() - open.started) / 1000 : 0);
    let stored = this.#message.tools?.find((t) => t.index === index);
    if (!stored) {
      // An end without its start (the runtime never announced it): kept all the same, while it fits.
      stored = this.#toolLog.start(index, name, "", {});
      if (!stored) return this.#limits.toolsFull();
      this.#message.tools ??= [];
      this.#message.tools.push(stored);
    }
    this.#toolLog.end(stored, output, event.ok, duration);
    this.#live({ type: "tool.end", payload: { index, name, output: stored.output, duration, ok: event.ok } });
  }

  async #storeMedia(event: MediaEvent): Promise<void> {
    const services = this.#services;
    const store = services.options.mediaStore;
    if (!store) {
      services.log.warn("runtime attached media but the gateway has no mediaStore; dropped");
      return;
    }
    const mediaId = newId("md");
    const writer = await store.createWriter(this.#owner, mediaId);
    try {
      await writer.write(event.data);
      await writer.commit();
    } catch (error) {
      await writer.abort();
      throw error;
    }
    const id = this.#message.message_id;
    const record: MediaRecord = {
      media_id: mediaId,
      kind: event.kind,
      mime: event.mime,
      size: event.data.byteLength,
      filename: event.filename,
      message_id: id,
      owner: this.#owner,
      sha256: createHash("sha256").update(event.data).digest("hex"),
      created_ts: services.now(),
    };
    await services.storage.putMedia(this.#owner, record);
    const ref: MediaRef = {
      media_id: mediaId,
      kind: event.kind,
      mime: event.mime,
      size: record.size,
      filename: event.filename,
    };
    this.#message.media.push(ref);
    this.offers.push({ ...ref, message_id: id });
  }
}
