/**
 * The slash-command registry: built-ins, the runtime's own commands and plugin commands.
 * @module
 */
import type { CommandCategory, CommandEntry } from "../contracts/records.js";
import type { AgentRuntime, CommandInput, RuntimeEvent } from "../contracts/runtime.js";

/**
 * Runs a plugin command. Return text (the assistant's reply), an async iterable of runtime events
 * (streamed like a turn), or nothing (no reply).
 */
export type CommandHandler = (
  input: CommandInput,
  // biome-ignore lint/suspicious/noConfusingVoidType: a command may return nothing, as a function without a return statement does
) => AsyncIterable<RuntimeEvent> | Promise<string | void> | string | void;

/** The commands the gateway itself runs, by their canonical name. */
export type BuiltinCommand = "/help" | "/stop" | "/new" | "/approve" | "/deny" | "/answer" | "/model";

/** Commands every gateway has. Their behaviour lives in the gateway; these are their catalog entries. */
export const BUILTIN_COMMANDS: readonly CommandEntry[] = [
  {
    name: "/help",
    description: "List the available commands",
    args_hint: "",
    category: "Info",
    aliases: ["/commands"],
  },
  {
    name: "/stop",
    description: "Stop the running answer in this conversation",
    args_hint: "",
    category: "Session",
    aliases: ["/cancel"],
  },
  {
    name: "/new",
    description: "Start a fresh context in this conversation",
    args_hint: "",
    category: "Session",
    aliases: ["/reset"],
  },
  // Answers to the agent's asks, for devices without pickers (docs/PROTOCOL.md §11).
  {
    name: "/approve",
    description: "Approve the agent's waiting request (the newest, or the one named)",
    args_hint: "[picker_id]",
    category: "Session",
    aliases: [],
  },
  {
    name: "/deny",
    description: "Deny the agent's waiting request (the newest, or the one named)",
    args_hint: "[picker_id]",
    category: "Session",
    aliases: [],
  },
  {
    name: "/answer",
    description: "Answer the agent's open question",
    args_hint: "<text>",
    category: "Session",
    aliases: [],
  },
  {
    name: "/model",
    description: "Choose the model the agent offered for this conversation",
    args_hint: "<id>",
    category: "Session",
    aliases: [],
  },
];

/** The six command categories of docs/PROTOCOL.md §6; a catalog entry has one of them. */
export const COMMAND_CATEGORIES: readonly CommandCategory[] = [
  "Session",
  "Configuration",
  "Tools & Skills",
  "Info",
  "Exit",
  "Plugin",
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

/**
 * Where a resolved command comes from. A built-in keeps its identity in `builtin` even when a
 * runtime or plugin command took its canonical name and it answers to an alias only.
 */
export type CommandSource =
  | { kind: "builtin"; entry: CommandEntry; builtin: BuiltinCommand }
  | { kind: "plugin"; entry: CommandEntry; handler: CommandHandler }
  | { kind: "runtime"; entry: CommandEntry };

/** Public face of the registry on the gateway (`gateway.commands`). */
export interface CommandRegistry {
  /**
   * Add a plugin command (category defaults to `Plugin`; `args_hint` to `""`). A later
   * registration of the same name replaces it. Names and aliases need a leading slash and no
   * whitespace, and are lower-cased; `category` must be one of the six (`Session`,
   * `Configuration`, `Tools & Skills`, `Info`, `Exit`, `Plugin`). Anything else throws `TypeError`.
   */
  register(
    entry: Omit<CommandEntry, "category" | "aliases" | "args_hint"> & Partial<CommandEntry>,
    handler: CommandHandler,
  ): void;
  /** Remove a plugin command. */
  unregister(name: string): void;
  /**
   * The catalog: built-ins, the runtime's commands, then plugin commands; every name and alias
   * once. A name is never hidden by a built-in: a plugin command wins over the runtime's and
   * both win over a built-in, which keeps whichever of its names are still free (a built-in with
   * none left is not listed). A runtime entry that is not a valid catalog entry is left out.
   */
  catalog(): Promise<CommandEntry[]>;
  /** Find a command by name or alias. */
  resolve(name: string): Promise<CommandSource | undefined>;
}

const COMMAND_NAME = /^\/[^\s/]\S*$/;

/** A valid, lower-cased command name, or a TypeError that says what is wrong. */
function checkName(name: unknown, where: string): string {
  const lower = typeof name === "string" ? name.trim().toLowerCase() : "";
  if (!COMMAND_NAME.test(lower)) {
    throw new TypeError(
      `${where}: ${JSON.stringify(name)} is not a command name (a leading slash, then at least one character, no spaces, e.g. "/weather")`,
    );
  }
  return lower;
}

/** Validate a catalog entry (plugin registration or a runtime's list) into its normal form. */
function checkEntry(
  entry: Partial<CommandEntry> & { name: string; description: string },
  where: string,
  fallbackCategory?: CommandCategory,
): CommandEntry {
  if (!entry || typeof entry !== "object") throw new TypeError(`${where}: a command entry must be an object`);
  const name = checkName(entry.name, `${where}: name`);
  if (typeof entry.description !== "string") throw new TypeError(`${where}: ${name}: description must be a string`);
  const argsHint = entry.args_hint ?? "";
  if (typeof argsHint !== "string") throw new TypeError(`${where}: ${name}: args_hint must be a string`);
  const category = entry.category ?? fallbackCategory;
  if (!COMMAND_CATEGORIES.includes(category as CommandCategory)) {
    throw new TypeError(
      `${where}: ${name}: category must be one of ${COMMAND_CATEGORIES.join(", ")}; got ${JSON.stringify(entry.category)}`,
    );
  }
  const aliases = entry.aliases ?? [];
  if (!Array.isArray(aliases)) throw new TypeError(`${where}: ${name}: aliases must be an array of command names`);
  const checked = aliases
    .map((alias) => checkName(alias, `${where}: ${name}: alias`))
    .filter((alias) => alias !== name);
  return {
    name,
    description: entry.description,
    args_hint: argsHint,
    category: category as CommandCategory,
    aliases: [...new Set(checked)],
  };
}

/**
 * What is left of an entry once higher-priority commands took their names: its free aliases, and
 * its own name when free. With `promote`, a taken name passes to the first free alias.
 */
function unclaimed(entry: CommandEntry, claimed: Set<string>, promote: boolean): CommandEntry | undefined {
  const aliases = entry.aliases.filter((alias) => !claimed.has(alias));
  let name = entry.name;
  if (claimed.has(name)) {
    if (!promote || aliases.length === 0) return undefined;
    name = aliases.shift()!;
  }
  claimed.add(name);
  for (const alias of aliases) claimed.add(alias);
  return { ...entry, name, aliases };
}

/** Create the registry for one gateway; `warn` hears of runtime entries left out of the catalog. */
export function createCommandRegistry(
  runtime: AgentRuntime,
  warn: (message: string) => void = () => undefined,
): CommandRegistry {
  const plugins = new Map<string, { entry: CommandEntry; handler: CommandHandler }>();
  const warned = new Set<string>();

  async function runtimeEntries(): Promise<CommandEntry[]> {
    const listed = runtime.commands ? await runtime.commands() : [];
    const valid: CommandEntry[] = [];
    for (const entry of Array.isArray(listed) ? listed : []) {
      try {
        valid.push(checkEntry(entry, "runtime.commands()"));
      } catch (error) {
        // Once per fault: the catalog is rebuilt on every request.
        const message = (error as Error).message;
        if (warned.has(message)) continue;
        warned.add(message);
        warn(`${message}; the command is left out of the catalog`);
      }
    }
    return valid;
  }

  /** Every command in catalog order, each name and alias claimed once, by priority. */
  async function sources(): Promise<CommandSource[]> {
    const claimed = new Set<string>();
    const fromPlugins: CommandSource[] = [];
    for (const plugin of plugins.values()) {
      const entry = unclaimed(plugin.entry, claimed, true);
      if (entry) fromPlugins.push({ kind: "plugin", entry, handler: plugin.handler });
    }
    // A runtime runs its command by the name it listed, so a taken name cannot pass to an alias.
    const fromRuntime: CommandSource[] = [];
    for (const listed of await runtimeEntries()) {
      const entry = unclaimed(listed, claimed, false);
      if (entry) fromRuntime.push({ kind: "runtime", entry });
    }
    const builtins: CommandSource[] = [];
    for (const builtin of BUILTIN_COMMANDS) {
      const entry = unclaimed(builtin, claimed, true);
      if (entry) builtins.push({ kind: "builtin", entry, builtin: builtin.name as BuiltinCommand });
    }
    return [...builtins, ...fromRuntime, ...fromPlugins];
  }

  return {
    register(entry, handler) {
      if (typeof handler !== "function") throw new TypeError("gateway.commands.register: handler must be a function");
      const checked = checkEntry(entry, "gateway.commands.register", "Plugin");
      plugins.set(checked.name, { entry: checked, handler });
    },
    unregister(name) {
      plugins.delete(typeof name === "string" ? name.trim().toLowerCase() : name);
    },
    async catalog() {
      return (await sources()).map((source) => source.entry);
    },
    async resolve(name) {
      const wanted = name.trim().toLowerCase();
      const all = await sources();
      return all.find((s) => s.entry.name === wanted) ?? all.find((s) => s.entry.aliases.includes(wanted));
    },
  };
}
