/**
 * The commands both runtime bindings answer: `/models` (show the lane's model, and choose among
 * the offered ones with a model picker, docs/PROTOCOL.md §11) and `/tools`. The gateway's own
 * `/model <id>` answers an open model picker; `/models` is what opens one.
 * @module
 */
import type { CommandEntry, CommandInput, RuntimeEvent } from "chat-gateway";

const COMMANDS: CommandEntry[] = [
  {
    name: "/models",
    description: "Show the model of this chat, and choose another when several are offered",
    args_hint: "",
    category: "Session",
    aliases: [],
  },
  {
    name: "/tools",
    description: "List the tools the model can call",
    args_hint: "",
    category: "Tools & Skills",
    aliases: [],
  },
];

/** The command list, copied so a caller cannot change the binding's own. */
export function bindingCommands(): CommandEntry[] {
  return COMMANDS.map((c) => ({ ...c, aliases: [...c.aliases] }));
}

/** What a binding's commands answer from: its models (the default first) and its tools. */
export interface BindingFacts {
  /** The models a lane may use, the default first; the lane's choice is `input.model`. */
  models: { id: string; label: string }[];
  tools: Array<[name: string, description: string | undefined]>;
}

/** Answers a command: the lane's model (asking for another when several are offered) or the tools. */
export async function* runBindingCommand(input: CommandInput, facts: BindingFacts): AsyncGenerator<RuntimeEvent> {
  if (input.command === "/models") {
    yield* chooseModel(input, facts.models);
  } else if (input.command === "/tools") {
    const { tools } = facts;
    yield {
      type: "text",
      delta:
        tools.length === 0
          ? "No tools."
          : tools.map(([n, description]) => `- ${n}${description ? `: ${description}` : ""}`).join("\n"),
    };
  } else {
    yield { type: "text", delta: `Unknown command ${input.command}` };
  }
}

async function* chooseModel(input: CommandInput, models: BindingFacts["models"]): AsyncGenerator<RuntimeEvent> {
  const current = models.find((m) => m.id === input.model)?.id ?? models[0]!.id;
  if (models.length < 2) {
    yield { type: "text", delta: `Model: ${current}` };
    return;
  }
  // The gateway keeps the chosen model for the lane and gives it to later turns as `input.model`.
  const answer = await input.ask({
    kind: "model",
    title: "Choose the model for this chat",
    models: models.map((m) => (m.id === current ? { ...m, current: true } : m)),
  });
  const chosen = answer.outcome === "selected" ? answer.option_id : undefined;
  yield { type: "text", delta: chosen === undefined ? `Model unchanged: ${current}` : `Model: ${chosen}` };
}
