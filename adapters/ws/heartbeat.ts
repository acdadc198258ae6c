/**
 * The server's ping: each socket must answer with the pong of that very ping (same random
 * payload, RFC 6455, section 5.5.3) within a deadline, or it is terminated. A pong nobody asked for, or
 * one with another payload, proves nothing about the peer reading, so it does not count.
 * @module
 */
import { randomBytes } from "node:crypto";
import type { WebSocket, WebSocketServer } from "ws";

interface Outstanding {
  nonce: Buffer;
  timer: NodeJS.Timeout;
}

/** Ping every socket each `intervalMs`; terminate those that do not answer within `timeoutMs`. */
export function startHeartbeat(
  wss: WebSocketServer,
  intervalMs: number,
  timeoutMs: number,
): { watch(ws: WebSocket): void; stop(): void } {
  const outstanding = new WeakMap<WebSocket, Outstanding>();
  const timers = new Set<NodeJS.Timeout>();

  const clear = (ws: WebSocket): void => {
    const o = outstanding.get(ws);
    if (!o) return;
    clearTimeout(o.timer);
    timers.delete(o.timer);
    outstanding.delete(ws);
  };

  const ping = (ws: WebSocket): void => {
    if (outstanding.has(ws) || ws.readyState !== ws.OPEN) return;
    const nonce = randomBytes(8);
    const timer = setTimeout(() => {
      timers.delete(timer);
      outstanding.delete(ws);
      ws.terminate();
    }, timeoutMs);
    timer.unref();
    timers.add(timer);
    outstanding.set(ws, { nonce, timer });
    ws.ping(nonce);
  };

  const interval = setInterval(() => {
    for (const ws of wss.clients) ping(ws);
  }, intervalMs);
  interval.unref();

  // One pair of listeners for every socket (an emitter calls its listeners with itself as `this`),
  // rather than two closures per idle connection.
  function onPong(this: WebSocket, data: Buffer): void {
    const o = outstanding.get(this);
    if (o && Buffer.isBuffer(data) && data.equals(o.nonce)) clear(this);
  }
  function onClose(this: WebSocket): void {
    clear(this);
  }

  return {
    watch(ws) {
      ws.on("pong", onPong);
      ws.on("close", onClose);
    },
    stop() {
      clearInterval(interval);
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
