// --metrics-port (docs/PROTOCOL.md §18.3): GET /metrics in the Prometheus text format on a
// listener of its own, on the server's host, so the port can stay closed to the public.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Gateway, PushSender } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import type { GatewayMetrics } from "chat-gateway/metrics";
import { HTTP_TIMEOUTS, type ServerConfig } from "./config.js";

/** The metrics of the example server, or pass-throughs without --metrics-port. */
export interface ServerMetrics {
  /** The storage with its calls timed (its hook and schedule members too, when it has them). */
  storage<S extends Storage>(storage: S): S;
  /** The push senders, each send counted into `chat_gateway_push_total`. */
  push(senders: PushSender[]): PushSender[];
  /** Count the gateway and start listening; resolves with the metrics URL (undefined when off). */
  start(gateway: Gateway): Promise<string | undefined>;
  close(): Promise<void>;
}

/** Rejects, naming the package, when --metrics-port is set and `prom-client` is not installed. */
export async function serverMetrics(config: ServerConfig): Promise<ServerMetrics> {
  if (config.metricsPort === undefined)
    return {
      storage: (storage) => storage,
      push: (senders) => senders,
      start: async () => undefined,
      close: async () => undefined,
    };
  // Imported only with --metrics-port, so its optional peer (prom-client) is needed only then.
  const { gatewayMetrics } = await import("chat-gateway/metrics");
  const metrics: GatewayMetrics = gatewayMetrics();
  const server = http.createServer(HTTP_TIMEOUTS, metrics.handler());
  return {
    storage: (storage) => metrics.storage(storage),
    push: (senders) => senders.map((sender) => metrics.push(sender)),
    async start(gateway) {
      metrics.observe(gateway);
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(config.metricsPort, config.host, () => resolve());
      });
      const host = config.host.includes(":") ? `[${config.host}]` : config.host;
      return `http://${host}:${(server.address() as AddressInfo).port}/metrics`;
    },
    async close() {
      metrics.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
