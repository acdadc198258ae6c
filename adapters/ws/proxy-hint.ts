/**
 * One warning for a server that seems to sit behind a reverse proxy without telling the adapter
 * how to find the client's address: every socket then comes from the proxy, and the gateway's
 * per-address limits (`maxConnectionsPerIp`, 64 by default) cap the whole service at once.
 * @module
 */
import type { IncomingMessage } from "node:http";
import { addressKey } from "chat-gateway";

/** What {@link proxyHint} returns. */
export type ProxyHint = ReturnType<typeof proxyHint>;

/** Watches upgrades when no `clientAddress` option was given; warns once. */
export function proxyHint(maxPerAddress: number, warn: (message: string) => void) {
  const open = new Map<string, number>();
  // Half the cap: early enough to read before the first refusal, rare enough for one busy NAT.
  const many = Math.max(2, Math.ceil(maxPerAddress / 2));
  let warned = false;
  const say = (why: string) => {
    if (warned) return;
    warned = true;
    warn(
      `${why}. Behind a reverse proxy every client shares the proxy's address, so the limit of ${maxPerAddress} connections per address ` +
        "(maxConnectionsPerIp) caps the whole service: pass attachWebSocket's clientAddress option, e.g. " +
        "`(req) => clientIp(req, 1)` from chat-gateway/login (the example server: --trust-proxy 1) (docs/PROTOCOL.md §18.4)",
    );
  };
  return {
    /**
     * A socket of `address` opened: true when it was counted, and {@link closed} is to be called
     * when it closes. Once the warning is out nothing more is counted.
     */
    opened(request: IncomingMessage, address: string | undefined): boolean {
      if (request.headers["x-forwarded-for"] !== undefined || request.headers.forwarded !== undefined) {
        say(
          "a WebSocket upgrade carried X-Forwarded-For or Forwarded, but attachWebSocket has no clientAddress option",
        );
      }
      if (address === undefined || warned) return false;
      const key = addressKey(address);
      const count = (open.get(key) ?? 0) + 1;
      open.set(key, count);
      if (count >= many)
        say(
          `${count} WebSocket connections are open from one address (${address}) and attachWebSocket has no clientAddress option`,
        );
      if (warned) open.clear();
      return !warned;
    },
    /** A socket counted by {@link opened} closed. */
    closed(address: string): void {
      const key = addressKey(address);
      const left = (open.get(key) ?? 1) - 1;
      if (left > 0) open.set(key, left);
      else open.delete(key);
    },
  };
}
