/**
 * The options of the AI SDK binding.
 * @module
 */
import type { streamText, LanguageModel, ToolSet } from "ai";
import type { ModelPrice, ToolApproval } from "chat-gateway";

/** `streamText`'s parameters, for the options passed through. */
export type StreamTextParams = Parameters<typeof streamText>[0];

/**
 * Options of {@link aiSdkRuntime}.
 *
 * @example
 * ```ts
 * const options: AiSdkRuntimeOptions = {
 *   model: anthropic("claude-sonnet-4-5"),
 *   maxSteps: 20,
 *   contextWindow: 200_000,
 *   prices: { input: 3, output: 15 },
 *   streamTextOptions: { temperature: 0.3, maxRetries: 1 },
 * };
 * ```
 */
export interface AiSdkRuntimeOptions {
  /** The language model: a provider's model object, or a model id string for the AI Gateway. */
  model: LanguageModel;
  /**
   * Other models a lane may switch to (docs/PROTOCOL.md §11: `picker.model`, `/model <id>`), each
   * with the id the person picks it by. A turn in a lane whose chosen model is one of them uses
   * it; any other lane uses `model`.
   */
  models?: Array<{ id: string; label?: string; model: LanguageModel }>;
  /** Tools made with the AI SDK's `tool()`; the AI SDK runs them. */
  tools?: ToolSet;
  /**
   * Tool calls that wait for the person's approval before they run (docs/PROTOCOL.md §11), besides
   * the tools marked with ai 6's `needsApproval`: a list of tool names, or a function of the name
   * and the arguments. Approved, the tool runs; denied, expired or cancelled, it does not, the call
   * is reported failed and the model gets an error result saying it was not approved.
   */
  needsApproval?: ToolApproval;
  /** System prompt. */
  system?: string;
  /** Model calls per turn when `stopWhen` is not given. Default 10. */
  maxSteps?: number;
  /** When to stop the tool loop, as `streamText` takes it; overrides `maxSteps`. */
  stopWhen?: StreamTextParams["stopWhen"];
  /** Passed to `streamText` as is. */
  providerOptions?: StreamTextParams["providerOptions"];
  /** Any other `streamText` option (`temperature`, `maxOutputTokens`, `maxRetries`, `headers`…). The binding's own options win. */
  streamTextOptions?: Partial<StreamTextParams>;
  /** Context window of the model, tokens; reported with the usage so the footer shows `context_pct`. */
  contextWindow?: number;
  /** Prices for the cost in the footer. Ignored when the provider reports a cost (OpenRouter). */
  prices?: ModelPrice;
  /** One-line summary of a tool call for the progress line. Default: the arguments, abridged. */
  preview?: (toolName: string, args: Record<string, unknown>) => string | undefined;
  /**
   * Send image attachments to the model as image parts (the model must accept images). Default
   * false: attachments are described to the model by a line of text.
   */
  vision?: boolean;
  /** Offer `generateTitle` for auto-threads. Default true. */
  generateTitle?: boolean;
  /** Model for titles, for example a cheaper one. Default: `model`. */
  titleModel?: LanguageModel;
}
