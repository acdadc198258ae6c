/**
 * The administration command line of the `chat-gateway` bin (`chat-gateway user add alice`,
 * `… device list`, `… key add`), for an embedder who wants the same commands in a bin of their
 * own: {@link runUserCli} runs one command line against the users file and the stores beside it,
 * and {@link terminalText} makes untrusted text safe to print on a terminal.
 * @module
 */
export { runUserCli, USER_CLI_USAGE } from "../http/user-cli.js";
export type { UserCliIO } from "../http/user-cli.js";
export { planAdoption } from "../http/adopt-anonymous.js";
export type { UserCliData, AdoptionServer, AdoptionPlan } from "../http/adopt-anonymous.js";
export { terminalText } from "../http/terminal-text.js";
