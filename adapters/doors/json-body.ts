/**
 * A door's request body: JSON only, bounded in bytes and read within a deadline.
 * @module
 */
import type { IncomingMessage } from "node:http";
import { DoorError, invalidRequest } from "./openai-errors.js";

/**
 * The parsed JSON body. `Content-Type` must be `application/json`: a foreign page cannot send that
 * without a CORS preflight, which no door answers. Over `limit` bytes is 413, malformed JSON 400.
 */
export async function readJsonBody(req: IncomingMessage, limit: number, timeoutMs: number): Promise<unknown> {
  const type = String(req.headers["content-type"] ?? "")
    .split(";")[0]
    .trim()
    .toLowerCase();
  if (type !== "application/json") {
    req.resume();
    throw new DoorError(415, "invalid_request_error", "the body must be application/json", "unsupported_media_type");
  }
  const body = await readBytes(req, limit, timeoutMs);
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    throw invalidRequest("the body is not valid JSON", "invalid_json");
  }
}

function readBytes(req: IncomingMessage, limit: number, timeoutMs: number): Promise<Buffer> {
  const tooLarge = () =>
    new DoorError(413, "invalid_request_error", `the body is over ${limit} bytes`, "request_too_large");
  return new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"]) > limit) {
      req.resume();
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error: Error | undefined) => {
      clearTimeout(timer);
      req.off("data", onData).off("end", onEnd).off("error", onError);
      if (error) {
        req.resume();
        reject(error);
      } else resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) finish(tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => finish(undefined);
    const onError = (error: Error) => finish(error);
    const timer = setTimeout(
      () => finish(new DoorError(408, "invalid_request_error", "the body came too slowly", "timeout")),
      timeoutMs,
    );
    req.on("data", onData).on("end", onEnd).on("error", onError);
  });
}
