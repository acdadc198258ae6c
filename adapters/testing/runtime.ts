// The AgentRuntime conformance suite, exported by "chat-gateway/testing".
import { afterEach, describe, expect, test } from "vitest";
import type { AgentRuntime } from "chat-gateway";
import { checkAsk, checkEvents, runTurn } from "./runtime-events.js";
import { startWire, wireTurn, type Wire } from "./runtime-wire.js";
import { within } from "./wait.js";

/**
 * What the suite needs the runtime to do in one test:
 * - `"answer"`: answer the message with some text;
 * - `"tool"`: call at least one tool, then answer;
 * - `"long"`: keep answering for longer than the suite waits (at least 10 s), so it can abort;
 * - `"fail"`: fail the turn (the model server answers an error, say);
 * - `"title"`: title a thread with `generateTitle`.
 */
export type RuntimeScenario = "answer" | "tool" | "long" | "fail" | "title";

/** A runtime under test: the runtime, the message that makes it play the scenario, and the clean-up. */
export interface RuntimeUnderTest {
  runtime: AgentRuntime;
  /** The user message the suite sends (default: a question such as "What is 2 + 3?"). */
  text?: string;
  /** Runs after the test (stop a fake model server). */
  cleanup?: () => Promise<void>;
}

/**
 * Makes the runtime for one test, set up to play `scenario`: for a runtime bound to a model
 * server, queue the matching response on a loopback stand-in of that server; for a scripted one,
 * return the message text that triggers the behaviour. Each runtime runs one turn.
 */
export type RuntimeFactory = (
  scenario: RuntimeScenario,
) => AgentRuntime | RuntimeUnderTest | Promise<AgentRuntime | RuntimeUnderTest>;

/** What the runtime can do, so the suite declares only the tests that apply. */
export interface RuntimeConformanceOptions {
  /** The runtime calls tools (default true): declares the `"tool"` tests. */
  tools?: boolean;
  /** The runtime can fail a turn (default true): declares the `"fail"` tests. */
  failures?: boolean;
  /** The runtime titles threads (default: true when it has `generateTitle`): declares the `"title"` test. */
  titles?: boolean;
  /** How soon after `signal` aborts the turn must end, milliseconds (default 2,000). */
  abortWithinMs?: number;
}

const DEFAULT_TEXT: Record<RuntimeScenario, string> = {
  answer: "What is 2 + 3?",
  tool: "Use a tool, then tell me what it said.",
  long: "Tell me a very long story.",
  fail: "This turn is meant to fail.",
  title: "Help me plan a trip to Lisbon in May",
};

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link AgentRuntime}
 * contract for one runtime, inside a `describe("runtime conformance: <name>")` block:
 *
 * ```ts
 * import { describeAgentRuntimeConformance } from "chat-gateway/testing";
 * describeAgentRuntimeConformance("my runtime", (scenario) => myRuntime(scenario), { tools: false });
 * ```
 *
 * What it checks, driving turns directly and through a real gateway (memory storage, a WebSocket
 * server on 127.0.0.1, one device):
 * - events: every yielded event is a well-formed `RuntimeEvent` (known type, fields of the right
 *   types, JSON args and outputs, usage totals that only grow, `done` last), an answer has text,
 *   and every `tool-start` is closed by its `tool-end`; asks, if the runtime makes any, are
 *   well-formed (the suite answers each with its first option: a runtime need not ask);
 * - abort: once `signal` aborts the turn ends (returns or throws) within `abortWithinMs`, and a
 *   turn started with an aborted signal ends as soon;
 * - failure: a failing turn throws an `Error` promptly instead of hanging, and over the wire ends
 *   as `message.stop {status: "error"}` while the gateway goes on answering;
 * - the wire: an answer streams as `message.start`, `message.update`s that each hold the text so
 *   far, and one `message.stop {status: "complete"}` that the device can read back in `history`;
 *   a tool call shows as `tool.start` and `tool.end` with one index, before the stop;
 * - `commands()`, when implemented, lists well-formed entries; `generateTitle` gives a title of
 *   one line.
 *
 * @param name Shown in the test names, e.g. `"openai-compatible"`.
 * @param make Makes the runtime for one scenario; see {@link RuntimeFactory}.
 * @param options What the runtime can do; see {@link RuntimeConformanceOptions}.
 */
export function describeAgentRuntimeConformance(
  name: string,
  make: RuntimeFactory,
  options: RuntimeConformanceOptions = {},
): void {
  const abortWithinMs = options.abortWithinMs ?? 2_000;
  describe(`runtime conformance: ${name}`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    async function setUp(scenario: RuntimeScenario): Promise<{ runtime: AgentRuntime; text: string }> {
      const made = await make(scenario);
      const underTest = "turn" in made ? { runtime: made } : made;
      if (underTest.cleanup) cleanups.push(underTest.cleanup);
      return { runtime: underTest.runtime, text: underTest.text ?? DEFAULT_TEXT[scenario] };
    }

    async function wire(runtime: AgentRuntime): Promise<Wire> {
      const started = await startWire(runtime);
      cleanups.push(() => started.close());
      return started;
    }

    test("events - an answer is well-formed events with text", async () => {
      const { runtime, text } = await setUp("answer");
      const turn = await runTurn(runtime, text, new AbortController().signal);
      expect(turn.error).toBeUndefined();
      checkEvents(turn.events, true);
      turn.asks.forEach(checkAsk);
      expect(turn.text.trim().length, "the answer's text").toBeGreaterThan(0);
    });

    describeAbortTests(setUp, abortWithinMs);

    test("wire - an answer streams to a device, ends complete and is in history", async () => {
      const { runtime, text } = await setUp("answer");
      const { device } = await wire(runtime);
      const { echo, frames, final } = await wireTurn(device, text);
      const finalText: string = final.payload.final_text;
      expect(final.payload.status).toBe("complete");
      expect(finalText.trim().length).toBeGreaterThan(0);
      expect(frames.filter((f) => f.type === "message.start").map((f) => f.payload.message_id)).toEqual([
        final.payload.message_id,
      ]);
      for (const update of frames.filter((f) => f.type === "message.update"))
        expect(finalText.startsWith(update.payload.text)).toBe(true);
      const history = await device.request("history", { chat_id: echo.payload.chat_id, limit: 10 });
      expect(history.payload.messages.at(-1)).toMatchObject({
        message_id: final.payload.message_id,
        role: "assistant",
        text: finalText,
        status: "complete",
      });
    });

    test("commands - commands(), when implemented, lists well-formed entries", async () => {
      const { runtime } = await setUp("answer");
      const entries = (await runtime.commands?.()) ?? [];
      for (const entry of entries) {
        expect(entry.name, "a command name starts with /").toMatch(/^\/\S+$/);
        expect(typeof entry.description === "string" && typeof entry.args_hint === "string").toBe(true);
        expect(entry.aliases.every((alias) => /^\/\S+$/.test(alias))).toBe(true);
      }
    });

    if (options.tools ?? true) describeToolTests(setUp, wire);
    if (options.failures ?? true) describeFailureTests(setUp, wire);
    if (options.titles ?? true) describeTitleTest(setUp);
  });
}

type SetUp = (scenario: RuntimeScenario) => Promise<{ runtime: AgentRuntime; text: string }>;
type WireUp = (runtime: AgentRuntime) => Promise<Wire>;

function describeAbortTests(setUp: SetUp, abortWithinMs: number): void {
  test("abort - the turn ends soon after the signal aborts", async () => {
    const { runtime, text } = await setUp("long");
    const controller = new AbortController();
    let abortedAt = 0;
    const turn = runTurn(runtime, text, controller.signal, () => {
      if (abortedAt === 0) {
        abortedAt = Date.now();
        controller.abort(new Error("stopped by the conformance suite"));
      }
    });
    const result = await within(
      turn,
      `the turn to end within ${abortWithinMs} ms of the abort`,
      abortWithinMs + 10_000,
    );
    expect(abortedAt, "the long turn yielded an event to abort after").toBeGreaterThan(0);
    expect(Date.now() - abortedAt, "milliseconds from abort to the end of the turn").toBeLessThanOrEqual(abortWithinMs);
    checkEvents(result.events, false);
  });

  test("abort - a turn started with an aborted signal ends as soon", async () => {
    const { runtime, text } = await setUp("long");
    const started = Date.now();
    await runTurn(runtime, text, AbortSignal.abort(new Error("stopped before it began")));
    expect(Date.now() - started, "milliseconds the aborted turn took").toBeLessThanOrEqual(abortWithinMs);
  });
}

function describeToolTests(setUp: SetUp, wire: WireUp): void {
  test("tools - a tool call is a tool-start closed by its tool-end, then the answer", async () => {
    const { runtime, text } = await setUp("tool");
    const turn = await runTurn(runtime, text, new AbortController().signal);
    expect(turn.error).toBeUndefined();
    checkEvents(turn.events, true);
    const types = turn.events.map((e) => e.type);
    expect(types).toContain("tool-start");
    expect(types.lastIndexOf("text")).toBeGreaterThan(types.indexOf("tool-end"));
  });

  test("wire - a tool call reaches the device as tool.start and tool.end of one index, before the stop", async () => {
    const { runtime, text } = await setUp("tool");
    const { device } = await wire(runtime);
    const { frames, final } = await wireTurn(device, text);
    const start = frames.find((f) => f.type === "tool.start")!;
    const end = frames.find((f) => f.type === "tool.end" && f.payload.index === start?.payload.index);
    expect(start, "a tool.start").toBeDefined();
    expect(end, "its tool.end").toBeDefined();
    expect(frames.indexOf(end!)).toBeLessThan(frames.indexOf(final));
    expect(final.payload.status).toBe("complete");
  });
}

function describeTitleTest(setUp: SetUp): void {
  test("title - generateTitle gives a short title of one line", async () => {
    const { runtime, text } = await setUp("title");
    expect(runtime.generateTitle, "generateTitle (pass titles: false for a runtime without it)").toBeTypeOf("function");
    const title = await within(runtime.generateTitle!(text, new AbortController().signal), "the title");
    expect(title.trim().length).toBeGreaterThan(0);
    expect(title).not.toMatch(/\n/);
  });
}

function describeFailureTests(setUp: SetUp, wire: WireUp): void {
  test("failure - a failing turn throws an Error promptly", async () => {
    const { runtime, text } = await setUp("fail");
    const turn = await within(runTurn(runtime, text, new AbortController().signal), "the failing turn to end", 10_000);
    expect(turn.error, "the error the turn threw").toBeInstanceOf(Error);
    checkEvents(turn.events, false);
  });

  test("wire - a failing turn ends as status error, and the gateway goes on", async () => {
    const { runtime, text } = await setUp("fail");
    const { device } = await wire(runtime);
    const { final } = await wireTurn(device, text);
    expect(final.payload.status).toBe("error");
    expect(final.payload.final_text).toMatch(/\S/);
    expect((await device.request("ping", { ts: 42 })).payload).toEqual({ ts: 42 });
  });
}
