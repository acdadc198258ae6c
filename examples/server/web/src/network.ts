// A phone that comes and goes (docs/PROTOCOL.md §21): what the browser knows about its network and
// the app's foreground, told to the client. Offline, the socket is given up at once (the page says
// "Offline" instead of a green dot over a dead socket); online again, or back in the foreground,
// the client tries at once with its backoff started over.
import type { GatewayClient } from "chat-gateway/client";

/**
 * Follows `online`, `offline`, `visibilitychange` and `pageshow` (a page restored from the
 * back-forward cache) for `client`; `changed` is called when `navigator.onLine` changed. Returns
 * the unsubscribe.
 */
export function followNetwork(client: GatewayClient, changed: () => void): () => void {
  const online = () => {
    client.reconnectNow();
    changed();
  };
  const offline = () => {
    client.networkLost();
    changed();
  };
  const visible = () => {
    if (document.visibilityState === "visible") client.reconnectNow();
  };
  const shown = () => client.reconnectNow();
  window.addEventListener("online", online);
  window.addEventListener("offline", offline);
  document.addEventListener("visibilitychange", visible);
  window.addEventListener("pageshow", shown);
  return () => {
    window.removeEventListener("online", online);
    window.removeEventListener("offline", offline);
    document.removeEventListener("visibilitychange", visible);
    window.removeEventListener("pageshow", shown);
  };
}

/**
 * Calls `again` once: after `waitMs`, or at once when the network or the app comes back (`online`,
 * the page visible again, `pageshow`), with `fresh` true then, so the caller starts its waits over.
 */
export function retrySoon(waitMs: number, again: (fresh: boolean) => void): void {
  const timer = setTimeout(() => fire(false), waitMs);
  const online = () => fire(true);
  const visible = () => {
    if (document.visibilityState === "visible") fire(true);
  };
  function fire(fresh: boolean): void {
    clearTimeout(timer);
    window.removeEventListener("online", online);
    window.removeEventListener("pageshow", online);
    document.removeEventListener("visibilitychange", visible);
    again(fresh);
  }
  window.addEventListener("online", online);
  window.addEventListener("pageshow", online);
  document.addEventListener("visibilitychange", visible);
}
