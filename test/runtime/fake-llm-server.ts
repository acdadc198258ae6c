// A loopback stand-in for an OpenAI-compatible server: each request is answered by the next
// handler in the queue, and every request is recorded so tests can assert what was sent.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** Resolves when the client closed the connection before the response ended. */
  closedEarly: Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: any) => void | Promise<void>;

export interface FakeLlmServer {
  baseUrl: string;
  requests: RecordedRequest[];
  /** Queue handlers; each answers one request, in order. */
  respond(...handlers: Handler[]): void;
  close(): Promise<void>;
}

export async function startFakeLlmServer(): Promise<FakeLlmServer> {
  const queue: Handler[] = [];
  const requests: RecordedRequest[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let closedEarlyResolve!: () => void;
    const closedEarly = new Promise<void>((resolve) => (closedEarlyResolve = resolve));
    res.on("close", () => {
      if (!res.writableFinished) closedEarlyResolve();
    });
    const body = text ? JSON.parse(text) : undefined;
    requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body, closedEarly });
    const handler = queue.shift();
    if (!handler) {
      res
        .writeHead(500, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { message: "no handler queued" } }));
      return;
    }
    try {
      await handler(req, res, body);
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    respond: (...handlers) => queue.push(...handlers),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `data: <json>\n\n` for each chunk, then `data: [DONE]`. */
export function sse(chunks: unknown[], { done = true } = {}): string {
  return (
    chunks.map((c) => `data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`).join("") +
    (done ? "data: [DONE]\n\n" : "")
  );
}

/** Streams `body` as an SSE response, in pieces of `pieceBytes` bytes (splitting lines, JSON and UTF-8 sequences). */
export function stream(
  body: string,
  { pieceBytes = 0, delayMs = 0, headers = {} as Record<string, string> } = {},
): Handler {
  return async (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers });
    res.flushHeaders();
    const bytes = Buffer.from(body, "utf8");
    if (pieceBytes <= 0) {
      res.end(bytes);
      return;
    }
    for (let i = 0; i < bytes.length; i += pieceBytes) {
      res.write(bytes.subarray(i, i + pieceBytes));
      await sleep(delayMs);
    }
    res.end();
  };
}

export function json(status: number, payload: unknown, headers: Record<string, string> = {}): Handler {
  return (_req, res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(payload));
  };
}

/** OpenAI's chunk envelope around one choice delta. */
export function chunk(
  delta: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  finish: string | null = null,
) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "gpt-4o-mini-2024-07-18",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...extra,
  };
}

/**
 * A server that never ends its response: `head`, then `piece(i)` for i = 0, 1, 2… as fast as the
 * client reads, until the client goes away. `written` counts the bytes it managed to send.
 */
export function endless(
  piece: (i: number) => string,
  { head = "", status = 200, contentType = "text/event-stream" } = {},
): Handler & { written: { bytes: number } } {
  const written = { bytes: 0 };
  const handler = async (_req: http.IncomingMessage, res: http.ServerResponse) => {
    const closed = new Promise<void>((resolve) => res.once("close", resolve));
    res.writeHead(status, { "content-type": contentType });
    if (head) res.write(head);
    for (let i = 0; !res.destroyed; i++) {
      const bytes = Buffer.from(piece(i), "utf8");
      written.bytes += bytes.length;
      // Either way this server waits for the loop: it shares the process with the gateway under test.
      if (res.write(bytes)) await new Promise((resolve) => setImmediate(resolve));
      else await Promise.race([new Promise((resolve) => res.once("drain", resolve)), closed]);
    }
  };
  return Object.assign(handler, { written });
}
