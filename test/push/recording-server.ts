/**
 * A loopback HTTP server that records every request and answers with a scripted handler; the
 * stand-in for ntfy, Google's token endpoint and FCM in the push tests.
 * @module
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the server saw it. */
export interface RecordedRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  /** The raw header lines, to see bytes exactly as sent (before Node's parsing). */
  rawHeaders: string[];
  body: string;
}

/** What the handler answers. */
export interface ScriptedResponse {
  status?: number;
  json?: unknown;
  text?: string;
}

/** A running recording server. */
export interface RecordingServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /**
   * Resolves once `check` holds, looked at as each request is recorded (at once if it holds
   * already): a test waits for the request it expects, not for a time.
   */
  until(check: () => boolean, what: string, ms?: number): Promise<void>;
  close(): Promise<void>;
}

/** Start a recording server on 127.0.0.1; `handler` decides each answer (default: 200, empty). */
export async function recordingServer(
  handler: (request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse> = () => ({}),
): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const recorded: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      requests.push(recorded);
      for (const look of [...waiters]) look();
      try {
        const answer = await handler(recorded);
        const status = answer.status ?? 200;
        if (answer.json !== undefined) {
          res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(answer.json));
        } else {
          res.writeHead(status, { "Content-Type": "text/plain" }).end(answer.text ?? "");
        }
      } catch (error) {
        res.writeHead(500).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    until: (check, what, ms = 20_000) =>
      new Promise<void>((resolve, reject) => {
        if (check()) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(look);
          reject(new Error(`timed out waiting for ${what}`));
        }, ms);
        const look = () => {
          if (!check()) return;
          clearTimeout(timer);
          waiters.delete(look);
          resolve();
        };
        waiters.add(look);
      }),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** A URL on 127.0.0.1 where nothing listens: a port that was just free. */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
