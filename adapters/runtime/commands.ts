/**
 * The commands both runtime bindings answer: `/model` and `/tools`.
 * @module
 */
import type { CommandEntry, CommandInput, RuntimeEvent } from "chat-gateway";

const COMMANDS: CommandEntry[] = [
  { name: "/model", description: "Show the model answering in this chat", args_hint: "", category: "Info", aliases: [] },
  { name: "/tools", description: "List the tools the model can call", args_hint: "", category: "Tools & Skills", aliases: [] },
];

/** The command list, copied so a caller cannot change the binding's own. */
export function bindingCommands(): CommandEntry[] {
  return COMMANDS.map((c) => ({ ...c, aliases: [...c.aliases] }));
}

/** Answers a command with the model's name or the tools' names and descriptions. */
export async function* runBindingCommand(
  input: CommandInput,
  model: string,
  tools: Array<[name: string, description: string | undefined]>,
): AsyncGenerator<RuntimeEvent> {
  if (input.command === "/model") {
    yield { type: "text", delta: `Model: ${model}` };
  } else if (input.command === "/tools") {
    yield {
      type: "text",
      delta: tools.length === 0 ? "No tools." : tools.map(([n, description]) => `- ${n}${description ? `: ${description}` : ""}`).join("\n"),
    };
  } else {
    yield { type: "text", delta: `Unknown command ${input.command}` };
  }
}
