// A complete custom runtime: a calculator agent. It shows every part of the AgentRuntime
// contract: streamed text, a tool call, usage, abort, failure, a slash command and titles.
import type { AgentRuntime, CommandEntry, RuntimeEvent, TurnInput } from "chat-gateway";

const MODEL = "calculator-1";
const ARITHMETIC = /(-?\d+(?:\.\d+)?)\s*([-+*/])\s*(-?\d+(?:\.\d+)?)/;

/** Waits `ms`, or less when the turn is stopped. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Streams `text` word by word, as a model would, until the turn is stopped. */
async function* say(text: string, delayMs: number, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
  for (const word of text.split(/(?<= )/)) {
    if (signal.aborted) return;
    yield { type: "text", delta: word };
    await pause(delayMs, signal);
  }
}

function calculate(a: number, operator: string, b: number): number {
  const result = operator === "+" ? a + b : operator === "-" ? a - b : operator === "*" ? a * b : a / b;
  // A real agent throws when its model fails; the gateway ends the turn with status "error".
  if (!Number.isFinite(result)) throw new Error(`${a} ${operator} ${b} has no finite result`);
  return result;
}

/** Options of {@link calculatorRuntime}. */
export interface CalculatorOptions {
  /** Milliseconds between streamed words (default 20). */
  delayMs?: number;
}

/**
 * The calculator agent: "What is 2 + 3?" calls its `calculate` tool and answers; "count to 100"
 * counts slowly (stop it with /stop); anything else gets a hint. "/about" is its own command.
 */
export function calculatorRuntime(options: CalculatorOptions = {}): AgentRuntime {
  const delayMs = options.delayMs ?? 20;
  const about: CommandEntry = {
    name: "/about",
    description: "What this agent can do",
    args_hint: "",
    category: "Info",
    aliases: [],
  };

  async function* turn(input: TurnInput): AsyncGenerator<RuntimeEvent> {
    const text = input.message.text;
    const count = /count to (\d+)/i.exec(text);
    const sum = ARITHMETIC.exec(text);
    if (count) {
      for (let i = 1; i <= Number(count[1]) && !input.signal.aborted; i++) yield* say(`${i} `, delayMs, input.signal);
    } else if (sum) {
      const [expression, a, operator, b] = sum;
      yield { type: "tool-start", id: "calc-1", name: "calculate", args: { expression } };
      const result = calculate(Number(a), operator, Number(b));
      yield { type: "tool-end", id: "calc-1", output: result, ok: true };
      yield* say(`${expression} = ${result}`, delayMs, input.signal);
    } else {
      yield* say("Ask me to calculate something, like 2 + 3, or to count to 10.", delayMs, input.signal);
    }
    const promptTokens = Math.ceil(text.length / 4);
    yield {
      type: "usage",
      model: MODEL,
      promptTokens,
      completionTokens: 12,
      totalTokens: promptTokens + 12,
      contextWindow: 4096,
    };
  }

  return {
    model: MODEL,
    turn,
    commands: () => [about],
    async *command() {
      yield* say("I add, subtract, multiply and divide two numbers, and I count.", 0, new AbortController().signal);
    },
    async generateTitle(text) {
      return `Calculator: ${text.trim().split(/\s+/).slice(0, 5).join(" ")}`;
    },
  };
}
