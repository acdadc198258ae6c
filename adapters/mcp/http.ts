/**
 * The MCP bridge over Streamable HTTP (docs/PROTOCOL.md §20.2): a plain `(req, res)` handler that,
 * per request, says hello as a door device of the bearer's owner and serves one MCP exchange
 * statelessly with the SDK's `createMcpHandler`.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { createMcpHandler } from "@modelcontextprotocol/server";
import type { Gateway } from "chat-gateway";
import type { DoorOptions, OpenedDoorDevice } from "chat-gateway/doors";
import { loadDoors } from "./doors.js";
import type { LinkFrame, McpGatewayLink } from "./link.js";
import { createMcpServer, maxWaitOf, type McpServerOptions } from "./tools.js";

/** Options of {@link createMcpHttpHandler}. */
export interface McpHttpOptions extends McpServerOptions {
  /** Decides a request before its hello (Host, Origin, login), as for the doors: pass the login protection's `authorizeUpgrade`. */
  authorize?: DoorOptions["authorize"];
  /** The client's address, counted against the gateway's per-address caps (default the socket's peer). */
  clientAddress?: DoorOptions["clientAddress"];
  /** True while the server drains: every request is 503. */
  unavailable?: DoorOptions["unavailable"];
  /** Largest request body, bytes (default 1 MiB); a larger one is 413. */
  maxBodyBytes?: number;
}

/** A plain Node request handler. */
export type McpHttpHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The web-standard Request of a Node request (its body streamed, cancelled when the client goes). */
function webRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  const method = req.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`), {
    method,
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: "half" } : {}),
  } as RequestInit);
}

/** Writes a web Response to the Node response, streaming its body (an SSE stream included). */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (!response.body) return void res.end();
  const reader = response.body.getReader();
  res.once("close", () => void reader.cancel().catch(() => undefined));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!res.write(value)) await new Promise<void>((resolve) => res.once("drain", resolve).once("close", resolve));
  }
  res.end();
}

/**
 * The MCP server over Streamable HTTP, for an embedder's own server: mount it at a path such as
 * `/mcp`. Each request's `Authorization: Bearer` is its credential, judged as the doors judge
 * theirs (docs/PROTOCOL.md §19.1: 401 without it while login is on, OpenAI-shaped errors); the
 * exchange is stateless (no MCP session), its device lives as long as the request.
 *
 * @example
 * ```ts
 * const mcp = createMcpHttpHandler(gateway, { authorize: (req) => protection.authorizeUpgrade(req) });
 * http.createServer((req, res) => (req.url?.startsWith("/mcp") ? mcp(req, res) : other(req, res)));
 * ```
 * @throws {TypeError} on a bad option
 */
export function createMcpHttpHandler(gateway: Gateway, options: McpHttpOptions = {}): McpHttpHandler {
  const maxBodyBytes = options.maxBodyBytes ?? 1 << 20;
  if (!Number.isFinite(maxBodyBytes) || maxBodyBytes <= 0)
    throw new TypeError(`maxBodyBytes must be positive, got ${maxBodyBytes}`);
  maxWaitOf(options);
  return async (req, res) => {
    const listeners = new Set<(frame: LinkFrame) => void>();
    const { openDoorDevice, sendDoorError } = await loadDoors();
    let opened: OpenedDoorDevice;
    try {
      opened = await openDoorDevice(gateway, req, {
        name: "mcp",
        authorize: options.authorize,
        clientAddress: options.clientAddress,
        unavailable: options.unavailable,
        onFrame: (frame) => {
          for (const listener of listeners) listener(frame);
        },
      });
    } catch (error) {
      sendDoorError(res, error);
      return;
    }
    const link: McpGatewayLink = {
      request: async (type, payload) => (await opened.device.request(type, payload)).payload,
      subscribe(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      openAsks: () => opened.openAsks(),
    };
    const handler = createMcpHandler(() => createMcpServer(link, options), { maxRequestBodySize: maxBodyBytes });
    const gone = new AbortController();
    res.once("close", () => gone.abort());
    try {
      await writeResponse(await handler.fetch(webRequest(req, gone.signal)), res);
    } catch (error) {
      sendDoorError(res, error);
    } finally {
      opened.device.close();
      await handler.close();
    }
  };
}
