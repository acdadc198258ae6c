/**
 * What a tool answers (docs/PROTOCOL.md §20.2): a text a person would read and the same data as
 * `structuredContent`; a gateway error is a result with `isError: true`, its code and message.
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";

/** A refusal the bridge itself makes, with a protocol code as the gateway's errors carry. */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ToolError";
  }
}

/** A tool's answer. */
export function toolResult(text: string, data: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: data };
}

/**
 * A thrown error as a tool result. A gateway or client error keeps its code and message; anything
 * else is `internal` with no detail, as the gateway sends it (its stack stays on this side).
 */
export function errorResult(error: unknown): CallToolResult {
  const coded = typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string";
  const code = coded ? (error as { code: string }).code : "internal";
  const message = coded && error instanceof Error ? error.message : "internal error";
  return {
    isError: true,
    content: [{ type: "text", text: `${code}: ${message}` }],
    structuredContent: { error: { code, message } },
  };
}
