/**
 * An answer's events as UI message stream chunks (docs/PROTOCOL.md §19): text and reasoning each
 * as one part, each tool call with its input and output, each ask as a `data-ask` part.
 * @module
 */
import type { AnswerEvent } from "./answer-follower.js";

/** A UI message stream chunk, as the `ai` package's writer takes it. */
export type UiChunk = Record<string, unknown> & { type: string };

/** Turns answer events into chunks for `write`; `done` settles once the answer ended or went. */
export function uiChunks(write: (chunk: UiChunk) => void): { emit: (event: AnswerEvent) => void; done: Promise<void> } {
  let answerId = "";
  const open = new Set<"text" | "reasoning">();
  let settle: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    settle = resolve;
  });
  const part = (kind: "text" | "reasoning", delta: string) => {
    const id = `${kind}-${answerId}`;
    if (!open.has(kind)) {
      open.add(kind);
      write({ type: `${kind}-start`, id });
    }
    write({ type: `${kind}-delta`, id, delta });
  };
  const closeParts = () => {
    for (const kind of open) write({ type: `${kind}-end`, id: `${kind}-${answerId}` });
    open.clear();
  };
  const emit = (event: AnswerEvent) => {
    switch (event.type) {
      case "start":
        answerId = event.messageId;
        write({ type: "start", messageId: event.messageId });
        write({ type: "start-step" });
        return;
      case "text":
      case "reasoning":
        return part(event.type, event.delta);
      case "tool-start":
        return write({
          type: "tool-input-available",
          toolCallId: `${answerId}-${event.index}`,
          toolName: event.name,
          input: event.args ?? {},
        });
      case "tool-end":
        return write(
          event.ok
            ? { type: "tool-output-available", toolCallId: `${answerId}-${event.index}`, output: event.output ?? null }
            : {
                type: "tool-output-error",
                toolCallId: `${answerId}-${event.index}`,
                errorText: String(event.output ?? "the tool failed"),
              },
        );
      case "ask": {
        const { type, payload } = event.frame;
        const data = type === "picker.resolved" ? { outcome: payload.outcome, ...payload } : { kind: type, ...payload };
        return write({ type: "data-ask", id: String(payload.picker_id), data });
      }
      case "end":
        closeParts();
        if (event.end.status === "error") write({ type: "error", errorText: event.end.text || "the answer failed" });
        write({ type: "finish-step" });
        write({ type: "finish" });
        return settle();
      case "gone":
        closeParts();
        write({ type: "error", errorText: event.reason });
        return settle();
    }
  };
  return { emit, done };
}
