// The example server, wired from the public API only: gateway + sql.js storage + media files +
// login protection + ws transport + the web UI, on one port. With DATABASE_URL and REDIS_URL it
// runs as one of several processes: PostgreSQL storage, Redis bus, sessions, lockouts and lane locks.
import http from "node:http";
import { mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createGateway, type AgentRuntime, type Bus, type LaneLock, type SessionStore, type Storage } from "chat-gateway";
import { createLoginProtection, type LockoutStore } from "chat-gateway/http";
import { fsMediaStore } from "chat-gateway/media/fs";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { openAICompatibleRuntime } from "chat-gateway/runtime/openai-compatible";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { attachWebSocket } from "chat-gateway/ws";
import type { ServerConfig } from "./config.js";
import { decodeOrUndefined, serveWeb } from "./static.js";

export interface RunningServer {
  url: string;
  port: number;
  /** Stop accepting, end running turns, flush storage, close sockets with 1001. */
  close(): Promise<void>;
}

/** A `type/subtype` with optional parameters: what may go into Content-Type as the client gave it. */
const MIME_TYPE = /^[A-Za-z0-9][\w.+-]*\/[\w.+-]+(\s*;[\x20-\x7e]*)?$/;

function pickRuntime(config: ServerConfig): AgentRuntime {
  if (!config.openaiBaseUrl) return demoRuntime();
  if (!config.openaiModel) throw new TypeError("OPENAI_MODEL (--openai-model) is required with OPENAI_BASE_URL");
  return openAICompatibleRuntime({ baseUrl: config.openaiBaseUrl, apiKey: config.openaiApiKey, model: config.openaiModel });
}

export async function startServer(config: ServerConfig, log: (line: string) => void = console.log): Promise<RunningServer> {
  if (config.redisUrl && !config.databaseUrl) {
    throw new TypeError("REDIS_URL (--redis-url) needs DATABASE_URL (--database-url): processes that share Redis must share one database");
  }
  let storage: Storage;
  let storagePath: string;
  const shared = await sharedState(config, log);
  if (config.databaseUrl) {
    // Imported only in this mode, so the optional pg peer is not needed otherwise.
    const { postgresStorage } = await import("chat-gateway/storage/postgres");
    storage = postgresStorage({ connectionString: config.databaseUrl, schema: config.databaseSchema });
    storagePath = `postgres (schema ${config.databaseSchema ?? "public"})${shared ? ", redis" : ""}`;
  } else if (config.memory) {
    storage = memoryStorage();
    storagePath = "memory";
  } else {
    mkdirSync(config.dataDir, { recursive: true });
    storage = sqlJsStorage({ dir: join(config.dataDir, "db") });
    storagePath = join(config.dataDir, "db");
  }
  const mediaDir = join(config.dataDir, "media");
  if (!config.memory) mkdirSync(mediaDir, { recursive: true });
  const protection = createLoginProtection({
    usersFile: config.usersFile,
    service: config.service,
    ...(shared ? { sessions: shared.sessions, lockoutStore: shared.lockoutStore } : {}),
  });
  const bus = shared?.bus(storage);
  const gateway = createGateway({
    storage,
    runtime: pickRuntime(config),
    authenticator: protection.authenticator(),
    // With several processes, <data-dir>/media must be one directory they all see.
    mediaStore: config.memory ? (await import("chat-gateway/media/memory")).memoryMediaStore() : fsMediaStore({ dir: mediaDir }),
    ...(shared && bus ? { bus, laneLock: shared.laneLock } : {}),
  });
  // Frames of the other processes must arrive before the first device does.
  await bus?.ready();
  await gateway.start();

  const server = http.createServer((req, res) => {
    void (async () => {
      if (await protection.handle(req, res)) return;
      if (await serveMedia(req, res)) return;
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
  });

  /** GET /api/media/<id> for browsers (PROTOCOL.md §7 extension): the owner's media only. */
  async function serveMedia(req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean> {
    const match = /^\/api\/media\/([^/?]+)/.exec(req.url ?? "");
    if (!match) return false;
    if (req.method !== "GET") {
      res.writeHead(405, { allow: "GET", "content-type": "application/json" }).end(JSON.stringify({ error: "method not allowed" }));
      return true;
    }
    const owner = (await protection.enabled()) ? protection.userOf(req) : "~anonymous";
    const id = decodeOrUndefined(match[1]);
    const record = owner && id !== undefined ? await storage.getMedia(owner, id) : undefined;
    if (!owner || !record) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not found" }));
      return true;
    }
    const media = gateway.options.mediaStore!;
    res.writeHead(200, {
      "content-type": MIME_TYPE.test(record.mime) ? record.mime : "application/octet-stream",
      "content-length": String(record.size),
      // encodeURIComponent throws on a lone surrogate, which a client-given filename may hold.
      "content-disposition": `inline; filename*=UTF-8''${encodeURIComponent(record.filename.replace(/[\ud800-\udfff]/gu, "\ufffd"))}`,
      "x-content-type-options": "nosniff",
      "cache-control": "private, max-age=3600",
    });
    for await (const chunk of media.read(owner, record.media_id)) res.write(chunk);
    res.end();
    return true;
  }

  const transport = attachWebSocket(gateway, { server, path: "/ws/gateway", authorizeUpgrade: (req) => protection.authorizeUpgrade(req) });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  const loginOn = await protection.enabled();
  log(`chat-gateway listening on ${url} (ws ${url.replace(/^http/, "ws")}/ws/gateway), storage ${storagePath}, login ${loginOn ? "on" : "off"} (users file ${config.usersFile})`);

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    close() {
      closing ??= (async () => {
        server.close();
        await gateway.close();
        await transport.close();
        await protection.close();
        await shared?.close();
        server.closeAllConnections();
      })();
      return closing;
    },
  };
}

interface SharedState {
  sessions: SessionStore;
  lockoutStore: LockoutStore;
  laneLock: LaneLock;
  bus(storage: Storage): Bus & { ready(): Promise<void> };
  close(): Promise<void>;
}

/** The Redis side of the multi-process mode, or undefined without REDIS_URL. */
async function sharedState(config: ServerConfig, log: (line: string) => void): Promise<SharedState | undefined> {
  if (!config.redisUrl) return undefined;
  const [{ Redis }, { redisBus }, { redisLaneLock, redisLockoutStore, redisSessionStore }] = await Promise.all([
    import("ioredis"),
    import("chat-gateway/bus/redis"),
    import("chat-gateway/redis"),
  ]);
  // No offline queue: while Redis is down a command fails at once instead of piling up, so logins
  // answer with an error, turns run without the lane lock and frames stay local (and are re-sent).
  const redis = new Redis(config.redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  let down = false;
  redis.on("error", (error: Error) => {
    if (!down) log(`redis: ${error.message}; retrying`);
    down = true;
  });
  redis.on("ready", () => {
    if (down) log("redis: connected again");
    down = false;
  });
  await redis.connect();
  const prefix = config.redisPrefix;
  let bus: (Bus & { ready(): Promise<void> }) | undefined;
  return {
    sessions: redisSessionStore(redis, { prefix }),
    lockoutStore: redisLockoutStore(redis, { prefix }),
    laneLock: redisLaneLock(redis, { prefix, ttlMs: config.laneTtlMs }),
    bus(storage) {
      bus ??= redisBus(redis, { prefix, storage });
      return bus;
    },
    async close() {
      await bus?.close?.();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
