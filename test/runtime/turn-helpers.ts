// Driving a runtime directly: a turn input and the events it yields, collected.
import type { RuntimeEvent, TurnInput } from "chat-gateway";

export function input(text: string, extra: Partial<TurnInput> = {}): TurnInput {
  return {
    owner: "alice",
    chat_id: "c1",
    thread_id: null,
    message: { message_id: "m9", text, media: [] },
    history: [],
    signal: new AbortController().signal,
    readMedia: async () => new Uint8Array(),
    ask: async () => ({ outcome: "cancelled" }),
    ...extra,
  };
}

export async function collect(iterable: AsyncIterable<RuntimeEvent>, onEvent?: (e: RuntimeEvent) => void) {
  const events: RuntimeEvent[] = [];
  let error: unknown;
  try {
    for await (const event of iterable) {
      events.push(event);
      onEvent?.(event);
    }
  } catch (e) {
    error = e;
  }
  const text = events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("");
  const reasoning = events.flatMap((e) => (e.type === "reasoning" ? [e.delta] : [])).join("");
  return { events, error, text, reasoning, usage: events.filter((e) => e.type === "usage").at(-1) };
}
