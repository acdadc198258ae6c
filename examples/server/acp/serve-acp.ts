// The ACP bridge (docs/PROTOCOL.md §20): an ACP agent on a pair of byte streams (the editor's
// stdio) that is, toward the gateway, one more device of the owner on the WebSocket. It loads the
// typed client and the ACP SDK only, never the server, so it starts within a second.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { agent, ndJsonStream, PROTOCOL_VERSION, RequestError, type InitializeResponse } from "@agentclientprotocol/sdk";
import { createGatewayClient, type GatewayClient } from "chat-gateway/client";
import WebSocket from "ws";
import { laneOf, sessionIdOf } from "./lanes.js";
import { PromptRun, type Log } from "./prompt-run.js";
import { promptMessage } from "./prompt-input.js";
import { listSessions, loadSession, newSession, resolveChannel } from "./sessions.js";

/** Options of {@link serveAcp}. */
export interface ServeAcpOptions {
  /** The gateway's WebSocket URL, e.g. `ws://127.0.0.1:8787/ws/gateway`. */
  url: string;
  /** A device token or API key of the owner (sent as `Authorization: Bearer` and in `hello`). */
  token: string;
  /** The channel new sessions open threads in, by id or name; default: the owner's default channel. */
  channel?: string;
  /** What the editor writes (its JSON-RPC, one message a line). */
  input: Readable;
  /** Where the editor reads: JSON-RPC only. */
  output: Writable;
  /** Where diagnostics go, one line each (never `output`). */
  log: Log;
}

/** The package's version, for `agentInfo`: the nearest package.json up from this file. */
function packageVersion(): string {
  for (const up of ["../../../package.json", "../../package.json", "../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "chat-gateway" && pkg.version) return pkg.version;
    } catch {
      // Not at this depth: the bundle and the source sit at different depths.
    }
  }
  return "0.0.0";
}

/**
 * Connects to the gateway as a device; resolves once it is in sync. A refused credential or a
 * gateway that cannot be reached rejects with an `Error` whose message is one line for a person.
 */
export async function dialGateway(url: string, token: string): Promise<GatewayClient> {
  const client = createGatewayClient({
    url,
    token,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    deviceId: `acp_${randomUUID().slice(0, 12)}`,
    deviceName: "Editor (ACP)",
    WebSocket: WebSocket as never,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      // The first attempt failing means a wrong URL or a gateway that is down: say so at once
      // instead of retrying forever behind an editor that shows nothing.
      client.once("state", function unreachable(state) {
        if (state === "reconnecting") reject(new Error(`cannot reach the gateway at ${url}`));
        else if (state === "connecting" || state === "syncing") client.once("state", unreachable);
      });
      client.connect().then(
        () => resolve(),
        (error: Error & { code?: string }) =>
          reject(error.code === "auth" ? new Error(`the gateway at ${url} refused the token`) : error),
      );
    });
    await client.ready();
    return client;
  } catch (error) {
    client.close();
    throw error;
  }
}

/** A gateway or client error as the JSON-RPC error the editor shows: its message, its code as data. */
function asRequestError(error: unknown, log: Log): unknown {
  if (error instanceof RequestError) return error;
  const message = error instanceof Error ? error.message : String(error);
  log(`prompt: ${message}`);
  return RequestError.internalError({ code: (error as { code?: string }).code }, message);
}

function initializeResponse(): InitializeResponse {
  return {
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: true,
      promptCapabilities: { image: true, embeddedContext: true },
      sessionCapabilities: { list: {} },
    },
    authMethods: [],
    agentInfo: { name: "chat-gateway", title: "chat-gateway", version: packageVersion() },
  };
}

/**
 * Serves ACP on `input`/`output` for the gateway at `url` until `input` ends. Rejects before
 * serving anything when the gateway cannot be reached or refuses the token.
 */
export async function serveAcp(options: ServeAcpOptions): Promise<void> {
  const client = await dialGateway(options.url, options.token);
  try {
    const channel = await resolveChannel(client, options.channel);
    const runs = new Map<string, PromptRun>();
    const app = agent({ name: "chat-gateway" })
      .onRequest("initialize", () => initializeResponse())
      .onRequest("session/new", async ({ params }) => ({
        sessionId: sessionIdOf(await newSession(client, channel, params.cwd)),
      }))
      .onRequest("session/load", async ({ params, client: editor }) => {
        await loadSession(client, editor, params.sessionId);
        return {};
      })
      .onRequest("session/list", async ({ params }) => ({
        sessions: await listSessions(client, channel, params.cwd ?? process.cwd()),
      }))
      .onRequest("session/prompt", async ({ params, client: editor }) => {
        if (runs.has(params.sessionId))
          throw RequestError.invalidRequest(undefined, "a prompt is already running in this session");
        const run = new PromptRun(client, editor, params.sessionId, laneOf(params.sessionId), options.log);
        runs.set(params.sessionId, run);
        try {
          return { stopReason: await run.run(await promptMessage(client, params.prompt)) };
        } catch (error) {
          throw asRequestError(error, options.log);
        } finally {
          runs.delete(params.sessionId);
        }
      })
      .onNotification("session/cancel", async ({ params }) => {
        await runs.get(params.sessionId)?.cancel();
      });
    const connection = app.connect(
      ndJsonStream(
        Writable.toWeb(options.output) as WritableStream<Uint8Array>,
        Readable.toWeb(options.input) as ReadableStream<Uint8Array>,
      ),
    );
    await connection.closed;
  } finally {
    client.close();
  }
}
