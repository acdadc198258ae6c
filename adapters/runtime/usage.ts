/**
 * The usage a runtime binding reports: tokens and cost summed over the model calls of a turn,
 * shared by the OpenAI-compatible and the AI SDK bindings so both footers count alike.
 * @module
 */
import type { ModelPrice, UsageEvent } from "chat-gateway";

/** What one model call used, as its server or provider reported it. */
export interface CallUsage {
  prompt?: number;
  completion?: number;
  total?: number;
  /** The billed cost, USD, when the server reports it (OpenRouter). */
  cost?: number;
}

/**
 * The usage a server or provider reported, its numbers checked: token counts are whole numbers
 * from 0 to 2^53 - 1, a cost a finite number >= 0; anything else is left out, as if not reported.
 */
export function reportedUsage(raw: Record<keyof CallUsage, unknown>): CallUsage {
  const count = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : undefined);
  const cost = typeof raw.cost === "number" && Number.isFinite(raw.cost) && raw.cost >= 0 ? raw.cost : undefined;
  return { prompt: count(raw.prompt), completion: count(raw.completion), total: count(raw.total), cost };
}

/** The running totals of a turn. */
export interface UsageTotals {
  /** Prompt tokens of the last call: it holds the whole conversation so far. */
  prompt?: number;
  completion: number;
  total: number;
  cost: number;
  costKnown: boolean;
}

/** Totals before the first model call. */
export function emptyTotals(): UsageTotals {
  return { prompt: undefined, completion: 0, total: 0, cost: 0, costKnown: false };
}

/**
 * Adds one call to the totals. A reported cost wins over one computed from `prices`; with
 * neither, the cost stays unknown rather than zero.
 */
export function addCallUsage(totals: UsageTotals, usage: CallUsage, prices: ModelPrice | undefined): void {
  if (usage.prompt !== undefined) totals.prompt = usage.prompt;
  totals.completion += usage.completion ?? 0;
  totals.total += usage.total ?? (usage.prompt ?? 0) + (usage.completion ?? 0);
  if (usage.cost !== undefined) {
    totals.cost += usage.cost;
    totals.costKnown = true;
  } else if (prices) {
    totals.cost += ((usage.prompt ?? 0) * prices.input + (usage.completion ?? 0) * prices.output) / 1e6;
    totals.costKnown = true;
  }
}

/** The `usage` event for the totals so far; counts nobody reported are left out, not zero. */
export function usageEvent(totals: UsageTotals, model: string, contextWindow: number | undefined): UsageEvent {
  const event: UsageEvent = { type: "usage", model };
  if (totals.prompt !== undefined) event.promptTokens = totals.prompt;
  if (totals.total > 0) {
    event.completionTokens = totals.completion;
    event.totalTokens = totals.total;
  }
  if (contextWindow !== undefined) event.contextWindow = contextWindow;
  if (totals.costKnown) event.cost = totals.cost;
  return event;
}
