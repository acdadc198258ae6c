// The one GatewayClient of the signed-in app: the socket at this page's host, the caps this
// browser supports, and a cursor and open asks kept per user in localStorage.
import {
  createGatewayClient,
  localStorageCursorStore,
  localStorageOpenAsksStore,
  type GatewayClient,
} from "chat-gateway/client";
import { authStatus } from "./api.js";
import { pushSupported } from "./pwa.js";
import { streamingSetting } from "./settings.js";

/** Milliseconds between the client's keep-alive pings. */
const PING_INTERVAL_MS = 1_000;

/** The client of the signed-in `user` (null when login protection is off); it connects on `connect()`. */
export function createAppClient(user: string | null): GatewayClient {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return createGatewayClient({
    url: `${scheme}//${location.host}/ws/gateway`,
    deviceName: `Web (${navigator.platform || "browser"})`,
    streaming: streamingSetting(),
    // Answers stream as appends (docs/PROTOCOL.md §12); the client joins them into the whole text.
    delta: true,
    // Web Push (docs/PROTOCOL.md §16): the subscription itself is sent once Settings made one.
    push: pushSupported() ? "webpush" : "none",
    // One cursor per signed-in user: another account in the same browser has its own outbox.
    cursorStore: localStorageCursorStore(`chat-gateway:cursor:${location.host}:${user ?? "~anonymous"}`),
    // The open asks go with the cursor: after a reload, the frames that opened them come before it.
    openAsksStore: localStorageOpenAsksStore(`chat-gateway:asks:${location.host}:${user ?? "~anonymous"}`),
    // A ping a second while the page is open: a socket whose network went away never closes by
    // itself, and two missed pings must say "Offline" within about 3 s (docs/PROTOCOL.md §21).
    // Pings are answered outside the gateway's frame budgets.
    pingIntervalMs: PING_INTERVAL_MS,
    checkAuth: async () => {
      const status = await authStatus();
      return !status.enabled || status.user !== null;
    },
  });
}
