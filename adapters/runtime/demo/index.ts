/**
 * The demo runtime: a zero-configuration agent that needs no network (docs/PROTOCOL.md §10.3). It
 * streams `You said: <text>` in small pieces (text of several lines on a line of its own after
 * `You said:` and a blank line) and ends with a runtime footer; a message that
 * starts with `tool:` first calls a demo tool `echo`. It asks the person too (docs/PROTOCOL.md §11):
 * `approve: X` asks before running `echo`, `ask: Q` asks a question, `model:` offers its two models.
 * @module
 */
import type { AgentRuntime, ModelChoice, RuntimeEvent, TurnInput } from "chat-gateway";

/** The models the demo offers with `model:`; `demo-fast` streams without pauses. */
const DEMO_MODELS: ModelChoice[] = [
  { id: "demo", label: "Demo" },
  { id: "demo-fast", label: "Demo (fast)" },
];

/**
 * The echo answer. Text of several lines gets its own paragraph: after "You said: " on the same
 * line, a Markdown fence or list it starts with would not open (docs/PROTOCOL.md §10.3).
 */
function youSaid(text: string): string {
  return text.includes("\n") ? `You said:\n\n${text}` : `You said: ${text}`;
}

/** Options of {@link demoRuntime}. */
export interface DemoRuntimeOptions {
  /** Characters per text delta (default 10, or `GATEWAY_DEMO_CHUNK_CHARS`). */
  chunkChars?: number;
  /** Milliseconds between deltas (default 15, or `GATEWAY_DEMO_DELAY_MS`; 0 streams as fast as it can). */
  delayMs?: number;
  /** Context window reported for `context_pct` (default 8,192 tokens). */
  contextWindow?: number;
}

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be a non-negative number, got "${raw}"`);
  return value;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The demo tool `echo`: a call that returns its argument, after one pause so a client sees it running. */
async function* echoTool(arg: string, signal: AbortSignal, delayMs: number): AsyncIterable<RuntimeEvent> {
  yield { type: "tool-start", id: "echo-1", name: "echo", args: { text: arg }, preview: `echo ${JSON.stringify(arg)}` };
  if (delayMs > 0) await sleep(delayMs, signal);
  yield { type: "tool-end", id: "echo-1", name: "echo", output: arg, ok: true };
}

/**
 * The answer's text, after any tool call or ask its message calls for: the demo's commands
 * (`tool:`, `approve:`, `ask:`, `model:`), or the plain echo.
 */
async function* prelude(input: TurnInput, model: string, delayMs: number): AsyncGenerator<RuntimeEvent, string> {
  const text = input.message.text;
  if (text.startsWith("tool:")) {
    const arg = text.slice("tool:".length).trim();
    yield* echoTool(arg, input.signal, delayMs);
    return youSaid(arg);
  }
  if (text.startsWith("approve:")) {
    const arg = text.slice("approve:".length).trim();
    const args = { text: arg };
    const answer = await input.ask({
      kind: "approval",
      title: "Run echo?",
      body: `The agent wants to run echo with ${JSON.stringify(args)}`,
      tool: { name: "echo", args },
    });
    if (answer.outcome !== "selected" || answer.option_id !== "approve") return "Denied.";
    yield* echoTool(arg, input.signal, delayMs);
    return youSaid(arg);
  }
  if (text.startsWith("ask:")) {
    const question = text.slice("ask:".length).trim() || "Yes or no?";
    const options = [
      { id: "yes", label: "Yes" },
      { id: "no", label: "No" },
    ];
    const answer = await input.ask({ kind: "confirm", title: question, body: question, options, allowText: true });
    if (answer.outcome !== "selected") return `No answer (${answer.outcome}).`;
    return `You answered: ${answer.option_id ?? answer.text ?? ""}`;
  }
  if (text.trim() === "model:") {
    const models = DEMO_MODELS.map((m) => (m.id === model ? { ...m, current: true } : m));
    const answer = await input.ask({ kind: "model", title: "Choose the model for this conversation", models });
    return answer.outcome === "selected" && answer.option_id
      ? `Model: ${answer.option_id}`
      : `Model unchanged: ${model}`;
  }
  return youSaid(text);
}

/**
 * Create the demo runtime.
 * @example
 * ```ts
 * const gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime({ delayMs: 0 }) });
 * ```
 */
export function demoRuntime(options: DemoRuntimeOptions = {}): AgentRuntime {
  const chunkChars = Math.max(1, Math.floor(options.chunkChars ?? envNumber("GATEWAY_DEMO_CHUNK_CHARS") ?? 10));
  const delayMs = options.delayMs ?? envNumber("GATEWAY_DEMO_DELAY_MS") ?? 15;
  const contextWindow = options.contextWindow ?? 8192;
  return {
    model: "demo",
    models: () => DEMO_MODELS,
    async *turn(input: TurnInput): AsyncIterable<RuntimeEvent> {
      const model = DEMO_MODELS.some((m) => m.id === input.model) ? input.model! : "demo";
      const answer = yield* prelude(input, model, delayMs);
      const pause = model === "demo-fast" ? 0 : delayMs;
      for (let at = 0; at < answer.length; at += chunkChars) {
        if (input.signal.aborted) return;
        if (pause > 0 && at > 0) await sleep(pause, input.signal);
        yield { type: "text", delta: answer.slice(at, at + chunkChars) };
      }
      const promptChars = input.history.reduce((n, m) => n + m.text.length, 0) + input.message.text.length;
      yield {
        type: "usage",
        model,
        promptTokens: Math.ceil(promptChars / 4),
        completionTokens: Math.ceil(answer.length / 4),
        contextWindow,
      };
    },
    async generateTitle(text: string) {
      const words = text.trim().split(/\s+/).slice(0, 6).join(" ");
      return words ? `Demo: ${words}` : "Demo thread";
    },
  };
}
