/**
 * An upgraded socket handed to the gateway as one of its connections. One pair of listeners
 * serves every socket (an emitter calls its listeners with itself as `this`), with what each
 * socket needs in a map, rather than two closures and their scope per idle connection.
 * @module
 */
import type { Duplex } from "node:stream";
import type { RawData, WebSocket } from "ws";
import type { ConnectionContext, ConnectionHandle, Gateway } from "chat-gateway";
import type { Heartbeat } from "./heartbeat.js";
import type { ProxyHint } from "./proxy-hint.js";
import { WsConnection } from "./ws-connection.js";

/** What the listeners need of one socket. */
interface Served {
  readonly handle: ConnectionHandle;
  readonly address: string | undefined;
  /** The proxy hint counting the address until the socket closes. */
  readonly counted: ProxyHint | undefined;
  readonly heartbeat: Heartbeat;
}

const served = new WeakMap<WebSocket, Served>();

function onMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
  const handle = served.get(this)?.handle;
  if (!handle) return;
  if (!isBinary) return handle.receiveText(data.toString());
  handle.receiveBinary(
    Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data,
  );
}

/** Both ends of a socket, `close` and `error`: whichever comes first. */
function onEnded(this: WebSocket): void {
  const s = served.get(this);
  if (!s) return;
  served.delete(this);
  s.heartbeat.forget(this);
  s.handle.closed();
  if (s.counted && s.address !== undefined) s.counted.closed(s.address);
}

/** Hands `ws` to the gateway, watched by the heartbeat; `counted`: the proxy hint counts its address until it closes. */
export function serve(
  gateway: Gateway,
  heartbeat: Heartbeat,
  ws: WebSocket,
  socket: Duplex,
  context: ConnectionContext,
  counted?: ProxyHint,
): void {
  heartbeat.watch(ws);
  const handle = gateway.accept(new WsConnection(ws, socket, context));
  served.set(ws, { handle, address: context.remoteAddress, counted, heartbeat });
  ws.on("message", onMessage);
  ws.on("close", onEnded);
  ws.on("error", onEnded);
}
