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

/** The heartbeat of one WebSocket server. */
export interface Heartbeat {
  /** Starts answering this socket's pongs. */
  watch(ws: WebSocket): void;
  /**
   * The socket closed: its outstanding ping, if any, is dropped. The caller's own `close` listener
   * calls it: with a third listener on a socket's `close`, its listener array grew to room for 19,
   * about 150 bytes more per idle connection.
   */
  forget(ws: WebSocket): void;
  stop(): void;
}

/** Ping every socket each `intervalMs`; terminate those that do not answer within `timeoutMs`. */
export function startHeartbeat(wss: WebSocketServer, intervalMs: number, timeoutMs: number): Heartbeat {
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

  // One listener for every socket (an emitter calls its listeners with itself as `this`), rather
  // than a closure per idle connection.
  function onPong(this: WebSocket, data: Buffer): void {
    const o = outstanding.get(this);
    if (o && Buffer.isBuffer(data) && data.equals(o.nonce)) clear(this);
  }

  return {
    watch(ws) {
      ws.on("pong", onPong);
    },
    forget: clear,
    stop() {
      clearInterval(interval);
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
