// The ACP bridge (docs/PROTOCOL.md §20): an ACP agent on a pair of byte streams (the editor's
// stdio) that is, toward the gateway, one more device of the owner on the WebSocket. It loads the
// typed client and the ACP SDK only, never the server, so it starts within a second.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import {
  type AgentApp,
  agent,
  ndJsonStream,
  PROTOCOL_VERSION,
  RequestError,
  type InitializeResponse,
} from "@agentclientprotocol/sdk";
import { ClientError, createGatewayClient, type GatewayClient, type WebSocketConstructor } from "chat-gateway/client";
import WebSocket from "ws";
import { laneOf, sessionIdOf } from "./lanes.js";
import { type AcpLog, PromptRun } from "./prompt-run.js";
import { promptMessage } from "./prompt-input.js";
import { type Channel, listSessions, loadSession, newSession, resolveChannel } from "./sessions.js";

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
  log: AcpLog;
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
 * Connects to the gateway as a device; resolves once it is in sync. Rejects with a
 * {@link ClientError} whose message is one line for a person: `auth` when the credential is
 * refused, `disconnected` when the first attempt cannot reach the gateway.
 */
async function dialGateway(url: string, token: string): Promise<GatewayClient> {
  const client = createGatewayClient({
    url,
    token,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    deviceId: `acp_${randomUUID().slice(0, 12)}`,
    deviceName: "Editor (ACP)",
    // The ws package even where Node has a global WebSocket: only it sends the upgrade's
    // Authorization header, which the gate of a gateway with login on checks (docs/PROTOCOL.md §9.2).
    WebSocket: WebSocket as unknown as WebSocketConstructor,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      // The first attempt failing means a wrong URL or a gateway that is down: say so at once
      // instead of retrying forever behind an editor that shows nothing.
      client.once("state", function unreachable(state) {
        if (state === "reconnecting") reject(new ClientError("disconnected", `cannot reach the gateway at ${url}`));
        else if (state === "connecting" || state === "syncing") client.once("state", unreachable);
      });
      client.connect().then(
        () => resolve(),
        (error: Error & { code?: string }) =>
          reject(error.code === "auth" ? new ClientError("auth", `the gateway at ${url} refused the token`) : error),
      );
    });
    await client.ready();
    return client;
  } catch (error) {
    client.close();
    throw error;
  }
}

/**
 * A gateway or client error of a prompt as the JSON-RPC error the editor shows: a lane the gateway
 * does not know is ACP's "session not found"; anything else keeps its message, its code as data.
 */
function asRequestError(error: unknown, sessionId: string, log: AcpLog): unknown {
  if (error instanceof RequestError) return error;
  const code = (error as { code?: string }).code;
  if (code === "not_found") return RequestError.sessionNotFound(sessionId);
  const message = error instanceof Error ? error.message : String(error);
  log(`prompt: ${message}`);
  return RequestError.internalError({ code }, message);
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

/** The gateway as the bridge uses it: a device in sync, and the channel its sessions live in. */
interface Joined {
  client: GatewayClient;
  channel: Channel;
}

async function join(options: ServeAcpOptions): Promise<Joined> {
  const client = await dialGateway(options.url, options.token);
  try {
    return { client, channel: await resolveChannel(client, options.channel) };
  } catch (error) {
    client.close();
    throw error;
  }
}

/** The ACP agent; each session method waits for the gateway, `initialize` does not. */
function agentApp(joined: Promise<Joined>, log: AcpLog): AgentApp {
  const runs = new Map<string, PromptRun>();
  return agent({ name: "chat-gateway" })
    .onRequest("initialize", () => initializeResponse())
    .onRequest("session/new", async ({ params }) => {
      const { client, channel } = await joined;
      return { sessionId: sessionIdOf(await newSession(client, channel, params.cwd)) };
    })
    .onRequest("session/load", async ({ params, client: editor }) => {
      await loadSession((await joined).client, editor, params.sessionId);
      return {};
    })
    .onRequest("session/list", async ({ params }) => {
      const { client, channel } = await joined;
      return { sessions: await listSessions(client, channel, params.cwd ?? process.cwd()) };
    })
    .onRequest("session/prompt", async ({ params, client: editor }) => {
      const { client } = await joined;
      if (runs.has(params.sessionId)) {
        throw RequestError.invalidRequest(undefined, "a prompt is already running in this session");
      }
      const run = new PromptRun(client, editor, params.sessionId, laneOf(params.sessionId), log);
      runs.set(params.sessionId, run);
      try {
        return { stopReason: await run.run(await promptMessage(client, params.prompt)) };
      } catch (error) {
        throw asRequestError(error, params.sessionId, log);
      } finally {
        runs.delete(params.sessionId);
      }
    })
    .onNotification("session/cancel", async ({ params }) => {
      await runs.get(params.sessionId)?.cancel();
    });
}

/**
 * Serves ACP on `input`/`output` for the gateway at `url` until `input` ends
 * (docs/PROTOCOL.md §20.1). The editor's `initialize` is answered at once while the gateway is dialed; when the
 * gateway refuses the token (`auth`), cannot be reached on the first attempt (`disconnected`) or
 * has no such channel (`not_found`), the ACP connection is closed and this rejects with a
 * {@link ClientError} whose message is one line for a person.
 * @example
 * ```ts
 * import { serveAcp } from "chat-gateway/acp";
 * await serveAcp({
 *   url: "ws://127.0.0.1:8787/ws/gateway",
 *   token: process.env.GATEWAY_TOKEN ?? "",
 *   input: process.stdin,
 *   output: process.stdout,
 *   log: (line) => process.stderr.write(`${line}\n`),
 * });
 * ```
 */
export async function serveAcp(options: ServeAcpOptions): Promise<void> {
  const joined = join(options);
  const stream = ndJsonStream(
    Writable.toWeb(options.output) as WritableStream<Uint8Array>,
    Readable.toWeb(options.input) as ReadableStream<Uint8Array>,
  );
  const connection = agentApp(joined, options.log).connect(stream);
  let failure: unknown;
  joined.catch((error: unknown) => {
    failure = error;
    connection.close(error);
  });
  await connection.closed.catch(() => undefined);
  if (failure !== undefined) throw failure;
  // The editor went away: the device leaves now, or as soon as a dial still under way ends.
  void joined.then(
    ({ client }) => client.close(),
    () => undefined,
  );
}
