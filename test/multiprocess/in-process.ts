// Gateways wired as separate processes would be (each its own PostgreSQL pool and Redis clients,
// one schema, one prefix), but in this process, so a test can reach their buses and cut their links.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { createGateway, type Authenticator, type Gateway, type PushSender } from "chat-gateway";
import { redisBus, type RedisBus, type RedisBusOptions } from "chat-gateway/bus/redis";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { DATABASE_URL, REDIS_URL } from "../fixtures/services.js";

export interface Node {
  name: string;
  redis: Redis;
  bus: RedisBus;
  gateway: Gateway;
  server: http.Server;
  transport: WebSocketTransport;
  url: string;
}

/**
 * Starts one gateway on the shared schema and prefix. Its Redis connections carry the name
 * `connectionName` (the bus's subscriber inherits it), so a test can find and cut them.
 */
export async function startNode(options: {
  name: string;
  schema: string;
  prefix: string;
  connectionName: string;
  /** Where Redis is (default the test server). */
  redisUrl?: string;
  redis?: { retryStrategy?: () => number; enableOfflineQueue?: boolean };
  bus?: Pick<RedisBusOptions, "channels">;
  authenticator?: Authenticator;
  /** Push senders and `pushAfterMs` (docs/PROTOCOL.md §15). */
  push?: PushSender[];
  pushAfterMs?: number;
}): Promise<Node> {
  const storage = postgresStorage({ connectionString: DATABASE_URL, schema: options.schema, poolSize: 3 });
  const redis = new Redis(options.redisUrl ?? REDIS_URL, {
    connectionName: options.connectionName,
    lazyConnect: true,
    ...options.redis,
  });
  redis.on("error", () => undefined);
  await redis.connect();
  const bus = redisBus(redis, { prefix: options.prefix, storage, warn: () => undefined, ...options.bus });
  await bus.ready();
  const gateway = createGateway({
    storage,
    hookStore: storage,
    scheduleStore: storage,
    runtime: demoRuntime({ delayMs: 0 }),
    bus,
    logger: { info() {}, warn() {}, error() {} },
    ...(options.authenticator ? { authenticator: options.authenticator } : {}),
    ...(options.push ? { push: options.push } : {}),
    ...(options.pushAfterMs !== undefined ? { pushAfterMs: options.pushAfterMs } : {}),
  });
  await gateway.start();
  const server = http.createServer();
  const transport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/gateway`;
  return { name: options.name, redis, bus, gateway, server, transport, url };
}

/** Closes the gateway, its server and its Redis client. */
export async function stopNode(n: Node): Promise<void> {
  await n.gateway.close();
  await n.transport.close();
  n.server.close();
  n.redis.disconnect();
}
