/**
 * The slash-command registry: built-ins, the runtime's own commands and plugin commands.
 * @module
 */
import type { CommandEntry } from "./records.js";
import type { AgentRuntime, CommandInput, RuntimeEvent } from "./runtime.js";

/**
 * Runs a plugin command. Return text (the assistant's reply), an async iterable of runtime events
 * (streamed like a turn), or nothing (no reply).
 */
export type CommandHandler = (
  input: CommandInput,
) => AsyncIterable<RuntimeEvent> | Promise<string | void> | string | void;

/** Commands every gateway has. Their behaviour lives in the gateway; these are their catalog entries. */
export const BUILTIN_COMMANDS: readonly CommandEntry[] = [
  { name: "/help", description: "List the available commands", args_hint: "", category: "Info", aliases: ["/commands"] },
  { name: "/stop", description: "Stop the running answer in this conversation", args_hint: "", category: "Session", aliases: ["/cancel"] },
  { name: "/new", description: "Start a fresh context in this conversation", args_hint: "", category: "Session", aliases: ["/reset"] },
];

/** A parsed slash command. */
export interface ParsedCommand {
  /** As typed, lower-cased, with its slash. */
  name: string;
  args: string;
}

/** `/Help me` → `{name: "/help", args: "me"}`; undefined when the text is not a slash command. */
export function parseCommand(text: string): ParsedCommand | undefined {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith("/") || trimmed.length < 2) return undefined;
  const match = /^(\/\S+)\s*([\s\S]*)$/.exec(trimmed);
  if (!match) return undefined;
  return { name: match[1].toLowerCase(), args: match[2].trim() };
}

/** Where a resolved command comes from. */
export type CommandSource =
  | { kind: "builtin"; entry: CommandEntry }
  | { kind: "plugin"; entry: CommandEntry; handler: CommandHandler }
  | { kind: "runtime"; entry: CommandEntry };

/** Public face of the registry on the gateway (`gateway.commands`). */
export interface CommandRegistry {
  /** Add a plugin command (category defaults to `Plugin`). A later registration of the same name replaces it. */
  register(entry: Omit<CommandEntry, "category" | "aliases" | "args_hint"> & Partial<CommandEntry>, handler: CommandHandler): void;
  /** Remove a plugin command. */
  unregister(name: string): void;
  /** The catalog: built-ins, the runtime's commands, then plugin commands; each name once. */
  catalog(): Promise<CommandEntry[]>;
  /** Find a command by name or alias. */
  resolve(name: string): Promise<CommandSource | undefined>;
}

function normalise(name: string): string {
  const lower = name.trim().toLowerCase();
  return lower.startsWith("/") ? lower : `/${lower}`;
}

/** Create the registry for one gateway. */
export function createCommandRegistry(runtime: AgentRuntime): CommandRegistry {
  const plugins = new Map<string, { entry: CommandEntry; handler: CommandHandler }>();

  async function sources(): Promise<CommandSource[]> {
    const list: CommandSource[] = BUILTIN_COMMANDS.map((entry) => ({ kind: "builtin", entry }));
    const own = runtime.commands ? await runtime.commands() : [];
    for (const entry of own) list.push({ kind: "runtime", entry });
    for (const plugin of plugins.values()) list.push({ kind: "plugin", ...plugin });
    return list;
  }

  return {
    register(entry, handler) {
      const name = normalise(entry.name);
      plugins.set(name, {
        entry: {
          name,
          description: entry.description,
          args_hint: entry.args_hint ?? "",
          category: entry.category ?? "Plugin",
          aliases: (entry.aliases ?? []).map(normalise),
        },
        handler,
      });
    },
    unregister(name) {
      plugins.delete(normalise(name));
    },
    async catalog() {
      const seen = new Set<string>();
      const out: CommandEntry[] = [];
      for (const source of await sources()) {
        if (seen.has(source.entry.name)) continue;
        seen.add(source.entry.name);
        out.push(source.entry);
      }
      return out;
    },
    async resolve(name) {
      const wanted = normalise(name);
      const all = await sources();
      return (
        all.find((s) => s.entry.name === wanted) ?? all.find((s) => s.entry.aliases.some((a) => normalise(a) === wanted))
      );
    },
  };
}
