/**
 * Steering through `streamText` (docs/PROTOCOL.md §14.4): a message steered into the running turn
 * joins the messages of its next step through `prepareStep`, and stays at that place in every later
 * step of the call (the SDK rebuilds each step's messages from the prompt and the responses, so
 * what `prepareStep` adds is kept here and added again).
 * @module
 */
import type { ModelMessage } from "ai";
import type { TurnSteers } from "../steer.js";
import type { StreamTextParams } from "./options.js";

type PrepareStep = NonNullable<StreamTextParams["prepareStep"]>;

/** A steered user message and where it joined: before the step message at that index. */
interface Joined {
  at: number;
  message: ModelMessage;
}

/** The steering of one `streamText` call of a turn. */
export interface SteeredRound {
  /** `streamText`'s `prepareStep`, after the caller's own when there is one. */
  prepareStep(own: StreamTextParams["prepareStep"]): PrepareStep;
  /** All of the call's messages with the steered ones in place, and those that came too late for it at the end. */
  merged(all: ModelMessage[]): ModelMessage[];
}

/** The steering of one `streamText` call: what `prepareStep` adds, and the messages for the next call. */
export function steeredRound(inbox: TurnSteers): SteeredRound {
  const joined: Joined[] = [];
  const place = (base: ModelMessage[]): ModelMessage[] => {
    const out: ModelMessage[] = [];
    let next = 0;
    base.forEach((message, i) => {
      while (next < joined.length && joined[next].at <= i) out.push(joined[next++].message);
      out.push(message);
    });
    while (next < joined.length) out.push(joined[next++].message);
    return out;
  };
  const userMessages = () => inbox.drain().map((text): ModelMessage => ({ role: "user", content: text }));
  return {
    prepareStep: (own) =>
      (async (step: Parameters<PrepareStep>[0]) => {
        const result = own ? await own(step as never) : undefined;
        for (const message of userMessages()) joined.push({ at: step.messages.length, message });
        if (joined.length === 0) return result;
        return { ...result, messages: place((result?.messages as ModelMessage[] | undefined) ?? step.messages) };
      }) as PrepareStep,
    merged: (all) => [...place(all), ...userMessages()],
  };
}
