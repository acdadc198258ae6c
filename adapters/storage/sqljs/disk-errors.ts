import { GatewayError } from "chat-gateway/protocol";

/** After a journal write failed, further writes are refused this long, ms, before one is tried again. */
export const RETRY_AFTER_FAILURE_MS = 1000;

/** The error a caller sees for a journal failure: a full disk says so, to the client as well. */
export function writeFailed(error: unknown): Error {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new GatewayError("internal", "the server's disk is full: the change was not saved; try again later", {
      cause: error,
    });
  }
  return new Error(`sql.js storage: the journal could not be written: ${(error as Error)?.message ?? String(error)}`, {
    cause: error,
  });
}
