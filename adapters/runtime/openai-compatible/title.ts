/**
 * Titles for auto-threads: one short, non-streamed model call.
 * @module
 */
import { GatewayError } from "chat-gateway/protocol";
import { abridge, cleanTitle } from "../text.js";
import { guardedRequest, httpError } from "./chat-completions.js";
import type { ClientConfig } from "./chat-completions.js";
import { parseChunk } from "./chunks.js";
import { acceptedType, ERROR_BODY_BYTES, readBoundedText, responseTooLarge } from "./response-limits.js";

const TITLE_PROMPT =
  "Write a title of at most 6 words for a conversation that starts with the user's message below. " +
  "Answer with the title only: no quotes, no trailing punctuation.";

/** The types a title's OK answer may have. */
const TITLE_TYPES = ["application/json", ""];

/** Asks `titleModel` for a title of the conversation that starts with `text`. */
export async function generateTitle(
  cfg: ClientConfig & { body: Record<string, unknown>; titleModel: string },
  text: string,
  signal: AbortSignal,
): Promise<string> {
  const guard = guardedRequest(cfg, signal);
  try {
    guard.touch();
    let response: Response;
    let raw: string;
    try {
      response = await cfg.fetch(cfg.url, {
        method: "POST",
        headers: cfg.headers,
        body: JSON.stringify({
          ...cfg.body,
          model: cfg.titleModel,
          stream: false,
          messages: [
            { role: "system", content: TITLE_PROMPT },
            { role: "user", content: abridge(text, 2000) },
          ],
        }),
        signal: guard.signal,
      });
      // Asked for a whole JSON answer; some minimal servers name no type. Anything else is not parsed.
      if (response.ok) await acceptedType(response, TITLE_TYPES, "a JSON answer");
      const read = await readBoundedText(response, response.ok ? cfg.maxResponseBytes : ERROR_BODY_BYTES);
      if (response.ok && !read.complete) throw responseTooLarge(cfg.maxResponseBytes);
      raw = read.text;
    } catch (error) {
      if (guard.state.timedOut)
        throw new GatewayError("internal", "The model server did not answer the title request in time", {
          cause: error,
        });
      throw error;
    }
    if (!response.ok) throw httpError(response, raw);
    const json = parseChunk(raw) as { choices?: Array<{ message?: { content?: unknown } }> };
    const content = json.choices?.[0]?.message?.content;
    const title = cleanTitle(typeof content === "string" ? content : "");
    if (title === "") throw new GatewayError("internal", "The model returned an empty title");
    return title;
  } finally {
    guard.dispose();
  }
}
