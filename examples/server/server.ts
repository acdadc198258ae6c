// The example server, wired from the public API only: gateway + sql.js storage + media files +
// login protection + ws transport + the web UI, on one port. With DATABASE_URL and REDIS_URL it
// runs as one of several processes: PostgreSQL storage, Redis bus, sessions, lockouts and lane locks.
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  ANONYMOUS_OWNER,
  consoleLogger,
  type CloseOptions,
  createGateway,
  type AgentRuntime,
  type Gateway,
  type Logger,
  type SessionStore,
} from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { startAdminSocket } from "./admin-socket.js";
import { serveAutomations } from "./automations.js";
import {
  clientIp,
  createLoginProtection,
  isLoopbackName,
  type LockoutStore,
  type LoginProtection,
} from "chat-gateway/login";
import { createAskActionHandler } from "chat-gateway/doors";
import { createHookHandler } from "chat-gateway/hooks";
import { createMediaHandler } from "chat-gateway/media/http";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { createDoors, type Doors } from "chat-gateway/doors";
import { createMcpHttpHandler, type McpHttpHandler } from "chat-gateway/mcp";
import { HTTP_TIMEOUTS, type ServerConfig } from "./config.js";
import { pickMediaStore, pickStorage, privateDataDir } from "./data.js";
import { serverMetrics, type ServerMetrics } from "./metrics.js";
import { serverPush, type ServerPush } from "./push.js";
import { serveReady, type ReadyChecks } from "./ready.js";
import { sharedState, type SharedState } from "./shared-state.js";
import { serveWeb } from "./static.js";

export interface RunningServer {
  url: string;
  port: number;
  /**
   * Stop accepting, end running turns, flush storage, close sockets with 1001; with `drainMs`,
   * drain first and close with 1012 (docs/PROTOCOL.md §18).
   */
  close(options?: CloseOptions): Promise<void>;
  /**
   * Resolves should the storage be down for good (the sql.js database process died and could not
   * be restarted, docs/PROTOCOL.md §10.2): close the server and exit non-zero, for the process
   * manager to start it afresh.
   */
  failed: Promise<Error>;
}

/** The agent, and how the start line names it: which runtime, which model, at which URL. */
function pickRuntime(config: ServerConfig): { runtime: AgentRuntime; label: string } {
  if (!config.openaiBaseUrl) return { runtime: demoRuntime(), label: "runtime demo (no model: it echoes)" };
  if (!config.openaiModel) throw new TypeError("OPENAI_MODEL (--openai-model) is required with OPENAI_BASE_URL");
  const runtime = openAICompatibleRuntime({
    baseUrl: config.openaiBaseUrl,
    apiKey: config.openaiApiKey,
    model: config.openaiModel,
  });
  return {
    runtime,
    label: `runtime openai-compatible, model ${config.openaiModel} at ${shownUrl(config.openaiBaseUrl)}`,
  };
}

/** A URL for the log without what may be a secret in it (user, password, query). */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "(an unparsable URL)";
  }
}

/**
 * The HTTP side: readiness, the login gate (which lets signed webhook posts through), webhooks,
 * media, the automations the web UI lists, then the web UI; anything else under /api/ or /ws/ is 404.
 */
function routes(
  ready: ReadyChecks,
  doors: { doors: Doors; mcp: McpHttpHandler },
  protection: LoginProtection,
  media: ReturnType<typeof createMediaHandler>,
  hooks: ReturnType<typeof createHookHandler>,
  actions: ReturnType<typeof createAskActionHandler>,
  gateway: Gateway,
  push: ServerPush,
): http.RequestListener {
  return (req, res) => {
    void (async () => {
      if (await serveReady(ready, req, res)) return;
      // POST /api/asks/{id}/act (docs/PROTOCOL.md §21): the action token is the credential.
      if (await actions(req, res)) return;
      // /v1/ (docs/PROTOCOL.md §19) and /mcp (§20.2): the bearer is the credential, checked at the door's hello.
      if (req.url === "/mcp" || req.url?.startsWith("/mcp?")) return void (await doors.mcp(req, res));
      if (await doors.doors.handle(req, res)) return;
      if (await protection.handle(req, res)) return;
      if (await hooks(req, res)) return;
      if (await media(req, res)) return;
      if (await serveAutomations(gateway, protection, req, res)) return;
      if (push.handle(req, res)) return;
      if (req.url?.startsWith("/api/") || req.url?.startsWith("/ws/")) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not found" }));
        return;
      }
      await serveWeb(req, res);
    })().catch((error) => {
      console.error(error);
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "internal error" }));
    });
  };
}

/** The admin socket for `hook ...` and `schedule ...`; without it only those commands are lost, not the server. */
function adminSocket(
  gateway: Gateway,
  protection: LoginProtection,
  config: ServerConfig,
  logger: Logger,
): Promise<() => Promise<void>> {
  return startAdminSocket(gateway, protection, config.dataDir).catch((error: unknown) => {
    logger.warn("the admin socket could not start; `hook ...` and `schedule ...` cannot reach this server", error);
    return async () => undefined;
  });
}

/** Listen where the config says; resolves with the port actually bound. */
async function listen(server: http.Server, config: ServerConfig): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

export async function startServer(
  config: ServerConfig,
  log: (line: string) => void = console.log,
): Promise<RunningServer> {
  if (config.redisUrl && !config.databaseUrl) {
    throw new TypeError(
      "REDIS_URL (--redis-url) needs DATABASE_URL (--database-url): processes that share Redis must share one database",
    );
  }
  // One logger for the gateway and every adapter, so their warnings land in one place.
  const logger = consoleLogger("[chat-gateway]");
  await privateDataDir(config, logger);
  const shared = await sharedState(config, log, logger);
  let fail!: (error: Error) => void;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const parts = await startGateway(config, logger, shared, fail);
  const { gateway, protection, metrics } = parts;
  let draining = false;
  const { server, transport } = httpServer(config, logger, shared, parts, () => draining);
  const port = await listen(server, config);
  const closeAdmin = await adminSocket(gateway, protection, config, logger);
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  log(startLine(config, url, parts.openReason, parts.runtimeAndStorage, parts.pushAndMetrics));

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    failed,
    close(options) {
      closing ??= (async () => {
        draining = true;
        server.close();
        await closeAdmin();
        await gateway.close(options);
        await transport.close();
        await protection.close();
        await shared?.close();
        await metrics.close();
        server.closeAllConnections();
      })();
      return closing;
    },
  };
}

/** The gateway and what it runs on, started: storage (counted for metrics), login, the bus, the agent, push. */
interface GatewayParts {
  gateway: Gateway;
  storage: Storage;
  protection: LoginProtection;
  push: ServerPush;
  metrics: ServerMetrics;
  /** Why login is off (undefined when it is on). */
  openReason: string | undefined;
  /** What the start line says of the runtime and the storage, and of push and metrics. */
  runtimeAndStorage: string;
  pushAndMetrics: string;
}

async function startGateway(
  config: ServerConfig,
  logger: Logger,
  shared: SharedState | undefined,
  fail: (error: Error) => void,
): Promise<GatewayParts> {
  const metrics = await serverMetrics(config);
  const picked = await pickStorage(config, logger, fail);
  const storage = metrics.storage(picked.storage);
  const protection = loginProtection(config, logger, shared);
  const openReason = await refuseOpenExposure(config, protection).catch(async (error: unknown) => {
    await protection.close();
    await shared?.close();
    throw error;
  });
  const bus = shared?.bus(storage);
  const agent = pickRuntime(config);
  const push = await serverPush(config, (senders) => metrics.push(senders));
  const gateway = createGateway({
    storage,
    // Webhooks and schedules (docs/PROTOCOL.md §17) in the same database, adopted with their channels.
    hookStore: storage,
    scheduleStore: storage,
    runtime: agent.runtime,
    logger,
    authenticator: protection.authenticator(),
    mediaStore: await pickMediaStore(config, logger),
    scheduler: true, // schedules (docs/PROTOCOL.md §17): every process ticks, the store lets one claim each slot
    ...push.options,
    ...(shared && bus ? { bus, laneLock: shared.laneLock } : {}),
    ...connectionCaps(config),
  });
  // Frames of the other processes must arrive before the first device does.
  await bus?.ready();
  await gateway.start();
  const metricsUrl = await metrics.start(gateway);
  return {
    gateway,
    storage,
    protection,
    push,
    metrics,
    openReason,
    runtimeAndStorage: `${agent.label}, storage ${picked.label}${shared ? ", redis" : ""}`,
    pushAndMetrics: `${push.label}${metricsUrl ? `, metrics ${metricsUrl}` : ""}`,
  };
}

/** The HTTP server in front of the gateway, with its socket transport on /ws/gateway; not listening yet. */
function httpServer(
  config: ServerConfig,
  logger: Logger,
  shared: SharedState | undefined,
  parts: GatewayParts,
  draining: () => boolean,
): { server: http.Server; transport: WebSocketTransport } {
  const { gateway, storage, protection, push } = parts;
  const media = mediaRoute(storage, gateway, protection);
  // POST /api/hooks/<id> (docs/PROTOCOL.md §17): the signature is the credential, no session.
  // With Redis the 60 posts a minute per hook are counted across every process.
  const hooks = createHookHandler({
    gateway,
    onError: (error) => logger.error("webhook failed", error),
    // Refused posts are counted per client, the address the trusted proxy saw (docs/PROTOCOL.md §17.2).
    clientAddress: (req) => clientIp(req, config.trustProxy ?? 0),
    ...(shared ? { postBudget: shared.hookBudget } : {}),
  });
  const actions = createAskActionHandler(gateway, {
    onError: (error) => logger.error("an ask's action failed", error),
    clientAddress: (req) => clientIp(req, config.trustProxy ?? 0),
  });
  const ready: ReadyChecks = {
    storage,
    draining,
    ...(shared ? { busConnected: shared.connected } : {}),
  };
  // Behind a reverse proxy every socket comes from the proxy: count the client it names instead.
  const clientAddress = (req: http.IncomingMessage) => clientIp(req, config.trustProxy ?? 0);
  const doorOptions = {
    authorize: (req: http.IncomingMessage) => protection.authorizeUpgrade(req),
    clientAddress,
    unavailable: draining,
  };
  const doors = { doors: createDoors(gateway, doorOptions), mcp: createMcpHttpHandler(gateway, doorOptions) };
  // A socket that connects and sends nothing, or never finishes its headers, is closed after 10 s.
  const server = http.createServer(
    HTTP_TIMEOUTS,
    routes(ready, doors, protection, media, hooks, actions, gateway, push),
  );
  const transport = attachWebSocket(gateway, {
    server,
    path: "/ws/gateway",
    authorizeUpgrade: (req) => protection.authorizeUpgrade(req),
    clientAddress,
    // The sockets the pacer counts per address are all the proxy's (docs/PROTOCOL.md §18.4).
    ...(config.trustProxy ? { paceSockets: { windowPerAddress: 16, maxSocketsPerAddress: Infinity } } : {}),
  });
  return { server, transport };
}

/** The line the server prints once it listens: where, which runtime and storage, login, push and metrics. */
function startLine(
  config: ServerConfig,
  url: string,
  openReason: string | undefined,
  parts: string,
  extras: string,
): string {
  const login = openReason === undefined ? `login on (users file ${config.usersFile})` : `login off: ${openReason}`;
  const warning = openReason === undefined ? "" : `\n${openWarning(config, url)}`;
  return `chat-gateway listening on ${url} (ws ${url.replace(/^http/, "ws")}/ws/gateway), ${parts}, ${login}, ${extras}${warning}`;
}

/** GET /api/media/<id> for browsers (docs/PROTOCOL.md §9.8): the owner's media only, never as a page. */
function mediaRoute(
  storage: Storage,
  gateway: Gateway,
  protection: LoginProtection,
): ReturnType<typeof createMediaHandler> {
  return createMediaHandler({
    storage,
    mediaStore: gateway.options.mediaStore!,
    ownerOf: async (req) => ((await protection.enabled()) ? protection.userOf(req) : ANONYMOUS_OWNER),
  });
}

/** The connection caps the flags set (the library's defaults otherwise). */
function connectionCaps(config: ServerConfig): { maxConnectionsPerOwner?: number; maxConnectionsPerIp?: number } {
  return {
    ...(config.connectionsPerOwner ? { maxConnectionsPerOwner: config.connectionsPerOwner } : {}),
    ...(config.connectionsPerIp ? { maxConnectionsPerIp: config.connectionsPerIp } : {}),
  };
}

/** Login protection for the server's users file, its sessions and lockouts shared through Redis when there is one. */
function loginProtection(
  config: ServerConfig,
  logger: Logger,
  shared: { sessions: SessionStore; lockoutStore: LockoutStore } | undefined,
) {
  return createLoginProtection({
    usersFile: config.usersFile,
    // On a network address login turning off at runtime would open the server to everyone.
    loginStaysOn: !isLoopbackName(bracketed(config.host)),
    service: config.service,
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
    trustProxy: config.trustProxy,
    logger,
    ...(config.maxDevicesPerUser ? { maxDevicesPerUser: config.maxDevicesPerUser } : {}),
    ...(shared ? { sessions: shared.sessions, lockoutStore: shared.lockoutStore } : {}),
  });
}

function openWarning(config: ServerConfig, url: string): string {
  const add = "run `chat-gateway user add <name>` (`npm run cli -- user add <name>` in a clone) to turn login on";
  return isLoopbackName(bracketed(config.host))
    ? `WARNING: login is OFF: every program and web page of this machine's own origin may chat without a password (pages of other sites and other host names are refused); ${add}`
    : `WARNING: login is OFF and ${config.host} is not a loopback address (--allow-open): anyone who can reach ${url} chats without a password; ${add}`;
}

function bracketed(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host.toLowerCase()}]` : host.toLowerCase();
}

/**
 * Why login is off (undefined when it is on). Refuses to go on when it is off and the address is
 * not a loopback one, unless --allow-open says so: an open gateway on a network is anyone's. A
 * users file that exists but cannot be used is refused there even with --allow-open: it was meant
 * to turn login on (a root-owned file the service account cannot read), so running open would fail open.
 */
async function refuseOpenExposure(config: ServerConfig, protection: LoginProtection): Promise<string | undefined> {
  if (await protection.enabled()) return undefined;
  const store = await protection.users.load();
  const why =
    store.state === "unreadable" || store.problem
      ? `the users file cannot be used (${store.problem}), which counts as no users`
      : `the users file ${config.usersFile} ${store.state === "absent" ? "does not exist" : "holds no users"}`;
  const loopback = isLoopbackName(bracketed(config.host));
  if (!loopback && store.state === "unreadable") {
    throw new TypeError(
      `refusing to listen on ${config.host} with login off: ${why}, and a users file that exists was meant to turn login on. ` +
        "Fix it (the server must be able to read it), or remove it to run open on purpose with --allow-open.",
    );
  }
  if (!loopback && !config.allowOpen) {
    throw new TypeError(
      `refusing to listen on ${config.host} with login off: ${why}, so anyone who can reach that address could chat without a password. ` +
        "Add a user first (`chat-gateway user add <name>`), listen on 127.0.0.1, or start with --allow-open (GATEWAY_ALLOW_OPEN=1) to run it open on purpose.",
    );
  }
  return why;
}
