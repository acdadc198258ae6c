/**
 * Prometheus metrics of a gateway (docs/PROTOCOL.md §18.3), on `prom-client`: connections, hellos,
 * frames in and out by type, turns running and waiting, turn durations, storage call durations,
 * pushes, the event loop's delay, and the process's default metrics, all named `chat_gateway_…`
 * (the defaults keep their usual names).
 *
 * ```ts
 * import http from "node:http";
 * import { createGateway } from "chat-gateway";
 * import { gatewayMetrics } from "chat-gateway/metrics";
 * const metrics = gatewayMetrics();
 * const gateway = createGateway({ storage: metrics.storage(storage), runtime, push: [metrics.push(ntfy)] });
 * metrics.observe(gateway);
 * http.createServer(metrics.handler()).listen(9464, "127.0.0.1");
 * ```
 * @module
 */
export { gatewayMetrics } from "./metrics.js";
export type { GatewayMetrics, GatewayMetricsOptions } from "./metrics.js";
