// Runtimes whose behaviour a test controls: they stand in for an agent, not for the gateway.
import type { AgentRuntime, RuntimeEvent, TurnInput } from "chat-gateway";

/** A runtime that yields the events a test hands it, turn by turn. */
export function scriptedRuntime(
  script: (input: TurnInput) => AsyncIterable<RuntimeEvent>,
  extra: Partial<AgentRuntime> = {},
): AgentRuntime & { inputs: TurnInput[] } {
  const inputs: TurnInput[] = [];
  return {
    inputs,
    turn(input) {
      inputs.push(input);
      return script(input);
    },
    ...extra,
  };
}

/** Resolves when `release()` is called; for turns that must wait for the test. */
export function gate(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((resolve) => (release = resolve));
  return { wait, release };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
