// The example server's settings: command-line flags beat environment variables beat defaults
// (docs/PROTOCOL.md §10.2).
import { join, resolve } from "node:path";
import type { WebPushSenderOptions } from "chat-gateway/push/webpush";

export interface ServerConfig {
  port: number;
  host: string;
  dataDir: string;
  usersFile: string;
  service: string;
  openaiBaseUrl?: string;
  openaiApiKey?: string;
  openaiModel?: string;
  databaseUrl?: string;
  /** PostgreSQL schema of the tables (default public). */
  databaseSchema?: string;
  redisUrl?: string;
  /** Prefix of the Redis keys and channel (default chat-gateway:); processes that share it form one gateway. */
  redisPrefix?: string;
  /** Lifetime of a lane lease in Redis, milliseconds (default 15,000): how long a crashed process can block a lane. */
  laneTtlMs?: number;
  /** Memory storage instead of sql.js (tests, throwaway demos). */
  memory: boolean;
  /** Listen on a non-loopback address even while login is off (nobody needs a password then). */
  allowOpen?: boolean;
  /** Host names besides loopback ones that requests may name while login is off. */
  allowedHosts?: string[];
  /** Reverse proxies in front of the server (hops whose X-Forwarded-For is believed; default 0). */
  trustProxy?: number;
  /** Connections per owner and per client address in this process (defaults: the gateway's, 32 and 64). */
  connectionsPerOwner?: number;
  connectionsPerIp?: number;
  /** Paired devices one user may have (docs/PROTOCOL.md §16; default the library's, 50). */
  maxDevicesPerUser?: number;
  /** Origins besides the server's own whose pages may open the WebSocket and post the login. */
  allowedOrigins?: string[];
  /** On SIGTERM, how long running turns may go on before they end interrupted (ms, default 10,000; docs/PROTOCOL.md §18). */
  drainMs?: number;
  /** Port of GET /metrics, on the same host (docs/PROTOCOL.md §18.3); off when undefined. */
  metricsPort?: number;
  /** An ntfy server to push through (docs/PROTOCOL.md §16); off when undefined. */
  ntfyUrl?: string;
  /** A Google service account JSON file to push through FCM; off when undefined. */
  fcmServiceAccount?: string;
  /** The VAPID key pair's file (default <data-dir>/vapid.json; made on first start). */
  vapidFile?: string;
  /** Who runs the server, for Web Push services: a mailto: or https: URL. */
  pushSubject?: string;
  /** Not a flag: a private push service's CA or address for the Web Push sender (embedding, tests). */
  webPush?: Pick<WebPushSenderOptions, "agent" | "endpointAllowed">;
  /** How long a connected device has to read an answer or an ask before it is pushed (ms; docs/PROTOCOL.md §15). */
  pushAfterMs?: number;
  /** Where people reach the server: pushes open their lane there, buttons post there (docs/PROTOCOL.md §21). */
  publicUrl?: string;
}

/** flag name → environment variable. */
const OPTIONS = {
  port: "PORT",
  host: "HOST",
  "data-dir": "GATEWAY_DATA_DIR",
  "users-file": "GATEWAY_USERS_FILE",
  service: "GATEWAY_SERVICE",
  "openai-base-url": "OPENAI_BASE_URL",
  "openai-api-key": "OPENAI_API_KEY",
  "openai-model": "OPENAI_MODEL",
  "database-url": "DATABASE_URL",
  "redis-url": "REDIS_URL",
  "database-schema": "DATABASE_SCHEMA",
  "redis-prefix": "REDIS_PREFIX",
  "lane-ttl-ms": "GATEWAY_LANE_TTL_MS",
  "allowed-hosts": "GATEWAY_ALLOWED_HOSTS",
  "allowed-origins": "GATEWAY_ALLOWED_ORIGINS",
  "trust-proxy": "GATEWAY_TRUST_PROXY",
  "connections-per-owner": "GATEWAY_CONNECTIONS_PER_OWNER",
  "connections-per-ip": "GATEWAY_CONNECTIONS_PER_IP",
  "max-devices-per-user": "GATEWAY_MAX_DEVICES_PER_USER",
  "drain-ms": "GATEWAY_DRAIN_MS",
  "metrics-port": "GATEWAY_METRICS_PORT",
  "ntfy-url": "GATEWAY_NTFY_URL",
  "fcm-service-account": "GATEWAY_FCM_SERVICE_ACCOUNT",
  "vapid-file": "GATEWAY_VAPID_FILE",
  "push-subject": "GATEWAY_PUSH_SUBJECT",
  "push-after-ms": "GATEWAY_PUSH_AFTER_MS",
  "public-url": "GATEWAY_PUBLIC_URL",
} as const;

/** The longest `--push-after-ms`: a day (a timer of more than 2^31 - 1 ms would fire at once). */
const PUSH_AFTER_MS_MAX = 86_400_000;

/**
 * The bounds of every HTTP listener of the example server (docs/PROTOCOL.md §10.2): a socket whose
 * request headers do not arrive within 10 s, or whose request is not complete within 30 s, is
 * closed. Node enforces both only when it checks, every `connectionsCheckingInterval` (30 s by
 * default, which let such a socket stay up to 30 s past its bound), hence every second.
 */
export const HTTP_TIMEOUTS = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  connectionsCheckingInterval: 1_000,
} as const;

export const HELP = `Usage: chat-gateway [options]
       chat-gateway user add|list|remove|set-password [name] [--users-file PATH] [--no-adopt]
       chat-gateway device list NAME | device revoke NAME DEVICE_ID
       chat-gateway key add NAME [--user USER] | key list [--user USER] | key remove NAME [--user USER]
       chat-gateway hook add|list|rotate|remove ...      (asks the running server)
       chat-gateway schedule add|list|remove|run ...     (asks the running server)
       chat-gateway mcp [--url URL] [--token TOKEN]      (an MCP server on stdio, --help)

Runs the example chat-gateway server: the gateway over WebSocket at /ws/gateway, the HTTP API
with login protection under /api/, and the web UI at /, all on one port.

Options (each also read from the environment variable in brackets):
  --port N                 port to listen on [PORT] (default 8787)
  --host ADDR              address to listen on [HOST] (default 127.0.0.1)
  --data-dir DIR           sql.js database and media files [GATEWAY_DATA_DIR] (default ./data)
  --users-file PATH        login user store [GATEWAY_USERS_FILE] (default <data-dir>/users.json)
  --service NAME           service name; the cookie is <name>_session [GATEWAY_SERVICE] (default gateway)
  --openai-base-url URL    use an OpenAI-compatible server instead of the demo runtime [OPENAI_BASE_URL]
  --openai-api-key KEY     its API key [OPENAI_API_KEY]
  --openai-model NAME      its model [OPENAI_MODEL]
  --database-url URL       PostgreSQL storage instead of sql.js [DATABASE_URL]
  --database-schema NAME   its schema [DATABASE_SCHEMA] (default public)
  --redis-url URL          Redis bus, sessions, login lockouts and lane locks, for several
                           processes on one database (needs --database-url) [REDIS_URL]
  --redis-prefix TEXT      prefix of its keys [REDIS_PREFIX] (default chat-gateway:)
  --lane-ttl-ms N          lane lease lifetime in Redis [GATEWAY_LANE_TTL_MS] (default 15000)
  --allowed-hosts LIST     host names (comma-separated) requests may name while login is off,
                           besides localhost and the listening address [GATEWAY_ALLOWED_HOSTS]
  --allowed-origins LIST   origins (comma-separated) besides the server's own whose pages may
                           connect and sign in [GATEWAY_ALLOWED_ORIGINS]
  --allow-open             listen on a non-loopback --host while login is off, so anyone who
                           can reach it chats without a password [GATEWAY_ALLOW_OPEN=1]
  --trust-proxy N          reverse proxies in front of this server, whose X-Forwarded-For
                           names the client [GATEWAY_TRUST_PROXY] (default 0)
  --connections-per-owner N  WebSocket connections per owner [GATEWAY_CONNECTIONS_PER_OWNER] (default 32)
  --connections-per-ip N   WebSocket connections per client address [GATEWAY_CONNECTIONS_PER_IP] (default 64)
  --max-devices-per-user N paired devices one user may have [GATEWAY_MAX_DEVICES_PER_USER] (default 50)
  --drain-ms N             on SIGTERM, let running turns finish for up to N ms, then end them
                           interrupted and close sockets with 1012 [GATEWAY_DRAIN_MS] (default 10000)
  --metrics-port N         serve GET /metrics (Prometheus) on this port of the same host
                           [GATEWAY_METRICS_PORT] (default off)
  --ntfy-url URL           push through this ntfy server to devices with an ntfy_topic [GATEWAY_NTFY_URL]
  --fcm-service-account FILE  push through FCM with this Google service account [GATEWAY_FCM_SERVICE_ACCOUNT]
  --vapid-file PATH        Web Push VAPID key pair, made on first start (mode 0600)
                           [GATEWAY_VAPID_FILE] (default <data-dir>/vapid.json)
  --push-subject URL       mailto: or https: contact sent to Web Push services
                           [GATEWAY_PUSH_SUBJECT] (default mailto:chat-gateway@example.invalid)
  --push-after-ms N        push an answer or an ask no device has read within N ms (at once
                           when none is connected), 0 to 86400000 [GATEWAY_PUSH_AFTER_MS] (default 60000)
  --public-url URL         where people reach this server: pushes open their lane there and an
                           ask's buttons post to it [GATEWAY_PUBLIC_URL] (default: the origin the
                           owner's devices last connected through)
  --memory                 keep chats and media in memory (the users file and the
                           admin socket stay in the data folder)
  --help                   show this help
`;

export class UsageError extends Error {}

export function parseConfig(argv: readonly string[], env: Record<string, string | undefined>): ServerConfig {
  const flags: Record<string, string> = {};
  let memory = false;
  let allowOpen = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--memory" || arg === "--allow-open") {
      if (arg === "--memory") memory = true;
      else allowOpen = true;
      continue;
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!match || !(match[1] in OPTIONS)) throw new UsageError(`unknown argument: ${arg}`);
    const value = match[2] ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${match[1]} needs a value`);
    flags[match[1]] = value;
  }
  const get = (name: keyof typeof OPTIONS) => flags[name] ?? (env[OPTIONS[name]] || undefined);
  const port = Number(get("port") ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`port must be 0 to 65535, got ${get("port")}`);
  const dataDir = resolve(get("data-dir") ?? "data");
  const laneTtl = get("lane-ttl-ms");
  const laneTtlMs = laneTtl === undefined ? undefined : Number(laneTtl);
  if (laneTtlMs !== undefined && (!Number.isInteger(laneTtlMs) || laneTtlMs < 100))
    throw new UsageError(`lane-ttl-ms must be an integer >= 100, got ${laneTtl}`);
  return {
    port,
    trustProxy: count(get("trust-proxy"), "trust-proxy", 0) ?? 0,
    connectionsPerOwner: count(get("connections-per-owner"), "connections-per-owner", 1),
    connectionsPerIp: count(get("connections-per-ip"), "connections-per-ip", 1),
    maxDevicesPerUser: count(get("max-devices-per-user"), "max-devices-per-user", 1, 10_000),
    drainMs: count(get("drain-ms"), "drain-ms", 0) ?? 10_000,
    metricsPort: count(get("metrics-port"), "metrics-port", 0),
    pushAfterMs: count(get("push-after-ms"), "push-after-ms", 0, PUSH_AFTER_MS_MAX),
    host: get("host") ?? "127.0.0.1",
    dataDir,
    usersFile: resolve(get("users-file") ?? join(dataDir, "users.json")),
    service: get("service") ?? "gateway",
    openaiBaseUrl: get("openai-base-url"),
    openaiApiKey: get("openai-api-key"),
    openaiModel: get("openai-model"),
    databaseUrl: get("database-url"),
    databaseSchema: get("database-schema"),
    redisUrl: get("redis-url"),
    redisPrefix: get("redis-prefix"),
    laneTtlMs,
    memory,
    allowOpen: allowOpen || flagEnv(env.GATEWAY_ALLOW_OPEN, "GATEWAY_ALLOW_OPEN"),
    allowedHosts: list(get("allowed-hosts")),
    allowedOrigins: list(get("allowed-origins")),
    ntfyUrl: get("ntfy-url"),
    fcmServiceAccount: get("fcm-service-account") && resolve(get("fcm-service-account")!),
    vapidFile: get("vapid-file") && resolve(get("vapid-file")!),
    pushSubject: get("push-subject"),
    publicUrl: get("public-url"),
  };
}

/** A whole-number setting of at least `min` (and at most `max`), or undefined when not given. */
function count(
  value: string | undefined,
  name: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new UsageError(
      `${name} must be an integer ${max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`}, got ${value}`,
    );
  }
  return n;
}

function list(value: string | undefined): string[] | undefined {
  const items = value
    ?.split(",")
    .map((item) => item.trim())
    .filter(Boolean);
  return items && items.length > 0 ? items : undefined;
}

/** An on/off environment variable: 1/true/yes or 0/false/no/empty; anything else is a usage error. */
function flagEnv(value: string | undefined, name: string): boolean {
  const v = (value ?? "").trim().toLowerCase();
  if (v === "1" || v === "true" || v === "yes") return true;
  if (v === "" || v === "0" || v === "false" || v === "no") return false;
  throw new UsageError(`${name} must be 1 or 0, got ${value}`);
}
