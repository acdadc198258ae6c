// What a well-formed stream of runtime events is, and a turn driven directly (without a gateway).
import { expect } from "vitest";
import type { AgentRuntime, Ask, AskAnswer, RuntimeEvent, TurnInput } from "chat-gateway";
import { GatewayError } from "chat-gateway/protocol";

const MEDIA_KINDS = new Set(["image", "audio", "video", "document", "voice"]);
const USAGE_NUMBERS = ["promptTokens", "completionTokens", "totalTokens", "contextWindow", "cost"] as const;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function isJson(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

function optional(value: unknown, type: "string" | "number"): boolean {
  return value === undefined || typeof value === type;
}

/** The open tool call a `tool-end` closes: by id, else the latest of its name, else the latest. */
function closes(open: Array<{ id?: string; name: string }>, end: { id?: string; name?: string }): number {
  if (end.id !== undefined) return open.findIndex((call) => call.id === end.id);
  if (end.name !== undefined) return open.findLastIndex((call) => call.name === end.name);
  return open.length - 1;
}

/** Checks one usage event, and that its totals did not shrink since the previous one. */
function checkUsage(
  event: Extract<RuntimeEvent, { type: "usage" }>,
  previous: Partial<Record<string, number>>,
  where: string,
): void {
  for (const key of USAGE_NUMBERS) {
    const value = event[key];
    if (value === undefined) continue;
    expect(Number.isFinite(value) && value >= 0, `${where}: ${key} is a non-negative number`).toBe(true);
    if (key !== "promptTokens" && key !== "contextWindow") {
      expect(value, `${where}: ${key} is a running total`).toBeGreaterThanOrEqual(previous[key] ?? 0);
      previous[key] = value;
    }
  }
  expect(optional(event.model, "string") && optional(event.cwd, "string"), `${where}: model and cwd are strings`).toBe(
    true,
  );
}

/**
 * Asserts that `events` are well-formed `RuntimeEvent`s (docs/PROTOCOL.md §4.2): known types with
 * fields of the right types and JSON values, usage totals that only grow, `done` last if at all,
 * and (for a turn that `completed`) every `tool-start` closed by its `tool-end`.
 */
export function checkEvents(events: RuntimeEvent[], completed: boolean): void {
  const open: Array<{ id?: string; name: string }> = [];
  const totals: Partial<Record<string, number>> = {};
  events.forEach((event, i) => {
    const where = `event ${i} ${JSON.stringify(event)?.slice(0, 200)}`;
    expect(isPlainObject(event), `${where}: an object`).toBe(true);
    switch (event.type) {
      case "text":
      case "reasoning":
        expect(typeof event.delta, `${where}: delta`).toBe("string");
        break;
      case "commentary":
        expect(typeof event.text, `${where}: text`).toBe("string");
        break;
      case "tool-start":
        expect(typeof event.name === "string" && event.name.length > 0, `${where}: a tool name`).toBe(true);
        expect(isPlainObject(event.args) && isJson(event.args), `${where}: args are a JSON object`).toBe(true);
        expect(
          optional(event.id, "string") && optional(event.preview, "string"),
          `${where}: id and preview are strings`,
        ).toBe(true);
        open.push({ id: event.id, name: event.name });
        break;
      case "tool-end": {
        expect(typeof event.ok, `${where}: ok`).toBe("boolean");
        expect(isJson(event.output), `${where}: output is a JSON value`).toBe(true);
        expect(
          optional(event.id, "string") && optional(event.name, "string"),
          `${where}: id and name are strings`,
        ).toBe(true);
        expect(
          event.duration === undefined || (Number.isFinite(event.duration) && event.duration >= 0),
          `${where}: duration`,
        ).toBe(true);
        const at = closes(open, event);
        expect(at, `${where}: ends a tool call that started`).toBeGreaterThanOrEqual(0);
        open.splice(at, 1);
        break;
      }
      case "usage":
        checkUsage(event, totals, where);
        break;
      case "media":
        expect(MEDIA_KINDS.has(event.kind), `${where}: kind`).toBe(true);
        expect(
          typeof event.mime === "string" && typeof event.filename === "string",
          `${where}: mime and filename`,
        ).toBe(true);
        expect(event.data instanceof Uint8Array, `${where}: data is a Uint8Array`).toBe(true);
        break;
      case "done":
        expect(i, `${where}: done is the last event`).toBe(events.length - 1);
        break;
      default:
        expect.fail(`${where}: not a RuntimeEvent type`);
    }
  });
  if (completed) expect(open, "tool calls the turn never ended").toEqual([]);
}

/** Checks that an ask is one of the kinds of the contract, with its title. */
export function checkAsk(ask: Ask): void {
  const where = `ask ${JSON.stringify(ask).slice(0, 200)}`;
  expect(["approval", "confirm", "model"], `${where}: kind`).toContain(ask.kind);
  expect(typeof ask.title === "string" && ask.title.length > 0, `${where}: a title`).toBe(true);
  if (ask.kind === "model")
    expect(Array.isArray(ask.models) && ask.models.length > 0, `${where}: models to choose from`).toBe(true);
}

/** How one direct turn went. */
export interface DirectTurn {
  events: RuntimeEvent[];
  asks: Ask[];
  /** What the iteration threw, if it did. */
  error: unknown;
  text: string;
}

/** The answer the suite gives an ask: the first option offered, or approval. */
function answer(ask: Ask): AskAnswer {
  if (ask.kind === "model") return { outcome: "selected", option_id: ask.models[0]?.id };
  return { outcome: "selected", option_id: ask.options?.[0]?.id ?? "approve" };
}

/** A turn input as the gateway builds one, with an earlier exchange in the lane's history. */
export function turnInput(text: string, signal: AbortSignal, asks: Ask[]): TurnInput {
  const ts = Date.now() - 60_000;
  return {
    owner: "kit-owner",
    chat_id: "kit-chat",
    thread_id: null,
    message: { message_id: "kit-message-3", text, media: [] },
    history: [
      { message_id: "kit-message-1", role: "user", text: "Hello", reasoning: "", ts, media: [] },
      {
        message_id: "kit-message-2",
        role: "assistant",
        text: "Hello! How can I help?",
        reasoning: "",
        ts: ts + 1_000,
        media: [],
        status: "complete",
      },
    ],
    signal,
    readMedia: async (mediaId) => {
      throw new GatewayError("not_found", `no media ${mediaId} in this turn`);
    },
    ask: async (request) => {
      asks.push(request);
      return answer(request);
    },
  };
}

/** Runs one turn of `runtime` directly; `onEvent` sees each event as it comes. */
export async function runTurn(
  runtime: AgentRuntime,
  text: string,
  signal: AbortSignal,
  onEvent?: (event: RuntimeEvent) => void,
): Promise<DirectTurn> {
  const events: RuntimeEvent[] = [];
  const asks: Ask[] = [];
  let error: unknown;
  try {
    for await (const event of runtime.turn(turnInput(text, signal, asks))) {
      events.push(event);
      onEvent?.(event);
    }
  } catch (e) {
    error = e;
  }
  const answerText = events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("");
  return { events, asks, error, text: answerText };
}
