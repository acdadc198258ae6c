/**
 * The demo runtime: a zero-configuration agent that needs no network (docs/PROTOCOL.md §10.3). It
 * streams `You said: <text>` in small pieces (text of several lines on a line of its own after
 * `You said:` and a blank line) and ends with a runtime footer; a message that
 * starts with `tool:` first calls a demo tool `echo`.
 * @module
 */
import type { AgentRuntime, RuntimeEvent, TurnInput } from "chat-gateway";

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
    async *turn(input: TurnInput): AsyncIterable<RuntimeEvent> {
      let text = input.message.text;
      if (text.startsWith("tool:")) {
        const arg = text.slice("tool:".length).trim();
        yield { type: "tool-start", id: "echo-1", name: "echo", args: { text: arg }, preview: `echo ${JSON.stringify(arg)}` };
        if (delayMs > 0) await sleep(delayMs, input.signal);
        yield { type: "tool-end", id: "echo-1", name: "echo", output: arg, ok: true };
        text = arg;
      }
      // Text of several lines gets its own paragraph: after "You said: " on the same line, a
      // Markdown fence or list it starts with would not open (docs/PROTOCOL.md §10.3).
      const answer = text.includes("\n") ? `You said:\n\n${text}` : `You said: ${text}`;
      for (let at = 0; at < answer.length; at += chunkChars) {
        if (input.signal.aborted) return;
        if (delayMs > 0 && at > 0) await sleep(delayMs, input.signal);
        yield { type: "text", delta: answer.slice(at, at + chunkChars) };
      }
      const promptChars = input.history.reduce((n, m) => n + m.text.length, 0) + input.message.text.length;
      yield {
        type: "usage",
        model: "demo",
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
