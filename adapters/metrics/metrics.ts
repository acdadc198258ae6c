import type { RequestListener } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Gateway, PushSender } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { sampleEventLoop } from "./event-loop.js";
import { timedStorage } from "./timed-storage.js";

/** Options of {@link gatewayMetrics}. */
export interface GatewayMetricsOptions {
  /** The registry to add to. Default: a new one of its own (not prom-client's global one). */
  registry?: Registry;
  /** Also collect the process's default metrics (CPU, memory, handles, GC). Default true. */
  defaultMetrics?: boolean;
}

/** The metrics of one or more gateways of this process; see {@link gatewayMetrics}. */
export interface GatewayMetrics {
  /** Where the metrics live. */
  readonly registry: Registry;
  /**
   * Count this gateway: connections, hellos, frames, turns. Read at scrape time from
   * `gateway.stats()` and from its `turn:start`/`turn:end` events, so counting costs the gateway
   * nothing per frame beyond its own counters. One gateway per metrics object.
   */
  observe(gateway: Gateway): void;
  /** The storage, each call timed into `chat_gateway_storage_call_duration_seconds{op}`. */
  storage<S extends Storage>(storage: S): S;
  /**
   * The push sender, each send counted into `chat_gateway_push_total{kind,result}` (`ok`, `failed`);
   * its `forget` is kept.
   */
  push(sender: PushSender): PushSender;
  /** The Prometheus text format of every metric. */
  metrics(): Promise<string>;
  /** A listener that answers `GET /metrics` with {@link GatewayMetrics.metrics}, and 404 to anything else. */
  handler(): RequestListener;
  /** Stop the event loop sampler and the default metrics' timers. */
  close(): void;
}

/** Buckets of turn durations (seconds): a quick answer to a long tool run. */
const TURN_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Buckets of storage call durations (seconds): an in-memory hit to a slow database. */
const STORAGE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * Prometheus metrics for a gateway (docs/PROTOCOL.md §18.3). Wrap the storage and push senders
 * before `createGateway`, then {@link GatewayMetrics.observe} the gateway; serve
 * {@link GatewayMetrics.handler} on a port of its own.
 */
export function gatewayMetrics(options: GatewayMetricsOptions = {}): GatewayMetrics {
  const registry = options.registry ?? new Registry();
  const registers = [registry];
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  const storageCalls = new Histogram({
    name: "chat_gateway_storage_call_duration_seconds",
    help: "Storage calls by method, seconds.",
    labelNames: ["op"],
    buckets: STORAGE_BUCKETS,
    registers,
  });
  const pushes = new Counter({
    name: "chat_gateway_push_total",
    help: "Push notifications sent, by sender and result.",
    labelNames: ["kind", "result"],
    registers,
  });
  const turns = new Histogram({
    name: "chat_gateway_turn_duration_seconds",
    help: "Turns from start to end, seconds.",
    buckets: TURN_BUCKETS,
    registers,
  });
  const loop = sampleEventLoop(registry);
  let observed: Gateway | undefined;
  gaugesOf(registry, () => observed?.stats());
  return {
    registry,
    observe(gateway) {
      if (observed)
        throw new TypeError(
          "gatewayMetrics: observe() takes one gateway; make another gatewayMetrics() with its own registry for a second",
        );
      observed = gateway;
      const started = new Map<string, number>();
      gateway.on("turn:start", (turn) => started.set(turn.message_id, performance.now()));
      gateway.on("turn:end", (turn) => {
        const at = started.get(turn.message_id);
        if (at === undefined) return;
        started.delete(turn.message_id);
        turns.observe((performance.now() - at) / 1000);
      });
    },
    storage: (storage) => timedStorage(storage, (op, seconds) => storageCalls.observe({ op }, seconds)),
    push: (sender) => countedPush(sender, pushes),
    metrics: () => registry.metrics(),
    handler: () => (req, res) => {
      const path = (req.url ?? "/").split("?", 1)[0];
      if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
        return;
      }
      registry.metrics().then(
        (text) =>
          res.writeHead(200, { "content-type": registry.contentType }).end(req.method === "HEAD" ? undefined : text),
        () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics failed\n"),
      );
    },
    close() {
      loop.stop();
      registry.clear();
    },
  };
}

/**
 * The sender, each send counted. Everything else is the sender's own: its `forget`, without which
 * the gateway could not drop a gone or failing target (docs/PROTOCOL.md §6).
 */
function countedPush(sender: PushSender, pushes: Counter<"kind" | "result">): PushSender {
  const counted: PushSender = {
    name: sender.name,
    accepts: (device) => sender.accepts(device),
    send: async (owner, device, message) => {
      try {
        await sender.send(owner, device, message);
        pushes.inc({ kind: sender.name, result: "ok" });
      } catch (error) {
        pushes.inc({ kind: sender.name, result: "failed" });
        throw error;
      }
    },
  };
  if (sender.forget) counted.forget = sender.forget.bind(sender);
  return counted;
}

/** The metrics read from `gateway.stats()` when scraped: gauges of load, counters of traffic. */
function gaugesOf(registry: Registry, stats: () => ReturnType<Gateway["stats"]> | undefined): void {
  const registers = [registry];
  const gauge = (name: string, help: string, read: (s: ReturnType<Gateway["stats"]>) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const now = stats();
        if (now) this.set(read(now));
      },
    });
  gauge("chat_gateway_connections", "Open WebSocket connections.", (s) => s.connections);
  gauge(
    "chat_gateway_connections_waiting",
    "New connections waiting for room before their upgrade.",
    (s) => s.connectionsWaiting,
  );
  gauge("chat_gateway_hellos_waiting", "Hellos waiting for a place under maxHellosInFlight.", (s) => s.hellosWaiting);
  gauge("chat_gateway_turns_running", "Turns running in this process.", (s) => s.turnsRunning);
  gauge("chat_gateway_turns_waiting", "Turns waiting for their lane in this process.", (s) => s.turnsWaiting);
  // Counters kept by the gateway: copied at scrape time (prom-client counters only go up, so reset and add).
  const counter = (
    name: string,
    help: string,
    label: string,
    read: (s: ReturnType<Gateway["stats"]>) => Record<string, number>,
  ) =>
    new Counter({
      name,
      help,
      labelNames: [label],
      registers,
      collect() {
        const now = stats();
        if (!now) return;
        this.reset();
        for (const [value, count] of Object.entries(read(now))) this.inc({ [label]: value }, count);
      },
    });
  counter("chat_gateway_hellos_total", "Handshakes by result (ok, refused, shed).", "result", (s) => ({
    ok: s.hellos.ok,
    refused: s.hellos.refused,
    shed: s.hellos.shed,
  }));
  counter("chat_gateway_frames_received_total", "Client frames received, by type.", "type", (s) => s.framesReceived);
  counter("chat_gateway_frames_sent_total", "Frames sent to clients, by type.", "type", (s) => s.framesSent);
}
