// --metrics-port (docs/PROTOCOL.md §18.3): GET /metrics in the Prometheus text format on a
// listener of its own, on the server's host, so the port can stay closed to the public.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Gateway, Storage } from "chat-gateway";
import { gatewayMetrics, type GatewayMetrics } from "chat-gateway/metrics";
import { HTTP_TIMEOUTS, type ServerConfig } from "./config.js";

/** The metrics of the example server, or pass-throughs without --metrics-port. */
export interface ServerMetrics {
  storage(storage: Storage): Storage;
  /** Count the gateway and start listening; resolves with the metrics URL (undefined when off). */
  start(gateway: Gateway): Promise<string | undefined>;
  close(): Promise<void>;
}

export function serverMetrics(config: ServerConfig): ServerMetrics {
  if (config.metricsPort === undefined)
    return { storage: (storage) => storage, start: async () => undefined, close: async () => undefined };
  const metrics: GatewayMetrics = gatewayMetrics();
  const server = http.createServer(HTTP_TIMEOUTS, metrics.handler());
  return {
    storage: (storage) => metrics.storage(storage),
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
