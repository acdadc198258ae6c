/**
 * Building the runtime footer object from what a runtime reports.
 * @module
 */
import type { RuntimeInfoOptions } from "../options/options.js";
export type { ModelPrice, RuntimeInfoOptions } from "../options/options.js";
import { homedir } from "node:os";
import type { RuntimeInfo } from "../contracts/records.js";
import type { UsageEvent } from "../contracts/runtime.js";

/** `openrouter/openai/gpt-5` → `gpt-5`; `models/gemini-2.5` → `gemini-2.5`. */
export function bareModelId(model: string): string {
  const slash = model.lastIndexOf("/");
  return slash === -1 ? model : model.slice(slash + 1);
}

/** `/home/ann/src/x` → `~/src/x` when under `home`; other paths unchanged. */
export function homeRelative(path: string, home: string = homedir()): string {
  if (!home) return path;
  if (path === home) return "~";
  const prefix = home.endsWith("/") ? home : `${home}/`;
  return path.startsWith(prefix) ? `~/${path.slice(prefix.length)}` : path;
}

/** Merge usage events of one turn: later values win, as the runtime reports totals. */
export function mergeUsage(into: Omit<UsageEvent, "type">, event: UsageEvent): void {
  for (const [key, value] of Object.entries(event)) {
    if (key !== "type" && value !== undefined && value !== null) (into as Record<string, unknown>)[key] = value;
  }
}

/** The runtime object of a finished turn; keys whose data is missing are absent. */
export function buildRuntimeInfo(
  usage: Omit<UsageEvent, "type">,
  latencyMs: number,
  options: RuntimeInfoOptions = {},
): RuntimeInfo {
  const info: RuntimeInfo = {};
  const model = usage.model ? bareModelId(usage.model) : undefined;
  if (model) info.model = model;
  const window =
    usage.contextWindow ??
    (typeof options.contextWindow === "function" ? options.contextWindow(model) : options.contextWindow);
  if (usage.promptTokens !== undefined && window && window > 0) {
    info.context_pct = Math.max(0, Math.min(100, Math.round((usage.promptTokens / window) * 100)));
  }
  const cwd = usage.cwd ?? options.cwd;
  if (cwd) info.cwd = homeRelative(cwd, options.home);
  info.latency = Math.round(latencyMs / 10) / 100;
  if (usage.cost !== undefined) {
    info.cost = usage.cost;
  } else if (
    model &&
    options.prices?.[model] &&
    (usage.promptTokens !== undefined || usage.completionTokens !== undefined)
  ) {
    const price = options.prices[model];
    info.cost = ((usage.promptTokens ?? 0) * price.input + (usage.completionTokens ?? 0) * price.output) / 1_000_000;
  }
  return info;
}
