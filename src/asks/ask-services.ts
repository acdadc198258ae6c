/**
 * What asking the person (docs/PROTOCOL.md §11) reads and writes through: what an answer uses,
 * plus the bus between processes, the lane lock, the runtime and commands (for completion) and
 * the registry of open asks.
 * @module
 */
import type { Bus } from "../contracts/bus.js";
import type { AgentRuntime } from "../contracts/runtime.js";
import type { ResolveLane } from "../channels/channel-directory.js";
import type { CommandRegistry } from "../turn/commands.js";
import type { AskRegistryServices, OpenAsks } from "./open-asks.js";

/** What the handlers of answers and completions use. */
export interface AskServices extends AskRegistryServices {
  readonly bus: Pick<Bus, "publish" | "subscribe" | "ready">;
  readonly asks: OpenAsks;
  readonly runtime: AgentRuntime;
  readonly commands: CommandRegistry;
  readonly resolveLane: ResolveLane;
}
