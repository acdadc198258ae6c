/**
 * `chat-gateway/acp`: the ACP bridge of docs/PROTOCOL.md §20.1. An Agent Client Protocol agent on a
 * pair of byte streams (an editor's stdio: Zed, JetBrains IDEs, Neovim, Emacs) that reaches the
 * agent behind a running gateway as one more device of the owner over the WebSocket, through
 * `chat-gateway/client`. Sessions are threads of a channel; prompts, reasoning, tool calls, asks,
 * cancel and other devices' messages map as the section says. The package's binary runs it as
 * `chat-gateway acp`.
 *
 * It loads the client and the ACP SDK only, never the server. Start with {@link serveAcp}.
 * @module
 */
export { serveAcp } from "./serve-acp.js";
export type { ServeAcpOptions } from "./serve-acp.js";
export type { AcpLog } from "./prompt-run.js";
