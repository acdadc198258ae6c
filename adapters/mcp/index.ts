/**
 * `chat-gateway/mcp`: the MCP bridge of docs/PROTOCOL.md §20.2. An assistant that calls MCP
 * servers (Claude Desktop, VS Code, Cursor, Goose) reads and continues the gateway's
 * conversations and answers the agent's asks through five tools: `list_conversations`,
 * `read_conversation`, `send_message`, `list_open_asks` and `answer_ask`.
 *
 * The tools act as a device of the gateway: over the typed WebSocket client ({@link clientLink},
 * what `chat-gateway mcp` serves on stdio) or, mounted on the gateway's own server, over
 * Streamable HTTP with an in-process door device per request ({@link createMcpHttpHandler}).
 *
 * Start with {@link createMcpServer} or {@link createMcpHttpHandler}.
 * @module
 */
export { createMcpServer } from "./tools.js";
export type { McpServerOptions } from "./tools.js";
export { clientLink } from "./link.js";
export type { McpGatewayLink, LinkFrame } from "./link.js";
export { createMcpHttpHandler } from "./http.js";
export type { McpHttpOptions, McpHttpHandler } from "./http.js";
export { ToolError } from "./results.js";
