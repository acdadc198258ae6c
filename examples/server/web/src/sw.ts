// The web UI's service worker (docs/PROTOCOL.md §16): shows a Web Push as a notification, opens
// its lane on a click, and keeps the app shell for offline starts. API answers (/api/, media
// included) and the socket (/ws/) never go through its cache: they are the user's data, and a
// stale copy of them would show a conversation that is not the real one.

/** The few service worker types used here (the DOM library has no ServiceWorkerGlobalScope). */
interface ExtendableEvent extends Event {
  waitUntil(work: Promise<unknown>): void;
}
interface FetchEvent extends ExtendableEvent {
  request: Request;
  respondWith(response: Promise<Response>): void;
}
interface PushEvent extends ExtendableEvent {
  data: { json(): unknown; text(): string } | null;
}
interface NotificationEvent extends ExtendableEvent {
  notification: Notification;
}
interface WindowClient {
  url: string;
  focus(): Promise<WindowClient>;
  postMessage(message: unknown): void;
}
interface Scope {
  registration: ServiceWorkerRegistration;
  clients: {
    matchAll(options: { type: "window"; includeUncontrolled: boolean }): Promise<WindowClient[]>;
    openWindow(url: string): Promise<WindowClient | null>;
    claim(): Promise<void>;
  };
  skipWaiting(): Promise<void>;
  addEventListener(type: string, listener: (event: never) => void): void;
}
const sw = self as unknown as Scope;

/** Bumped when the shell's file list changes; older caches are deleted on activation. */
const CACHE = "chat-gateway-shell-v1";
const SHELL = [
  "/",
  "/app.js",
  "/theme.js",
  "/styles.css",
  "/code-blocks.css",
  "/icon.svg",
  "/icon-192.png",
  "/icon-512.png",
  "/manifest.webmanifest",
];

/** What the gateway's Web Push sender posts (chat-gateway/push/webpush `WebPushPayload`). */
interface Payload {
  title?: string;
  body?: string;
  chat_id?: string;
  thread_id?: string | null;
  message_id?: string;
  picker_id?: string;
}

sw.addEventListener("install", (event: ExtendableEvent) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => sw.skipWaiting()),
  );
});

sw.addEventListener("activate", (event: ExtendableEvent) => {
  const old = caches
    .keys()
    .then((keys) => Promise.all(keys.filter((key) => key !== CACHE).map((key) => caches.delete(key))));
  event.waitUntil(old.then(() => sw.clients.claim()));
});

/** Only the app shell: same origin, GET, never /api/ (media included) or /ws/. */
function isShell(request: Request): boolean {
  const url = new URL(request.url);
  return (
    request.method === "GET" &&
    url.origin === location.origin &&
    !url.pathname.startsWith("/api/") &&
    !url.pathname.startsWith("/ws/")
  );
}

/** Network first, so a new version shows at once; the cached copy when offline. */
async function shell(request: Request): Promise<Response> {
  const cache = await caches.open(CACHE);
  // Any page of the app is the one page (a single-page app), so it is cached once, as "/".
  const key = request.mode === "navigate" ? "/" : request;
  try {
    const response = await fetch(request);
    if (response.ok && response.type === "basic") await cache.put(key, response.clone());
    return response;
  } catch (error) {
    const cached = await cache.match(key);
    if (cached) return cached;
    throw error;
  }
}

sw.addEventListener("fetch", (event: FetchEvent) => {
  if (isShell(event.request)) event.respondWith(shell(event.request));
});

function payloadOf(event: PushEvent): Payload {
  try {
    const data = event.data?.json();
    return typeof data === "object" && data !== null ? (data as Payload) : {};
  } catch {
    return { body: event.data?.text() ?? "" };
  }
}

sw.addEventListener("push", (event: PushEvent) => {
  const push = payloadOf(event);
  const lane = push.chat_id ? { chat_id: push.chat_id, thread_id: push.thread_id ?? null } : undefined;
  event.waitUntil(
    sw.registration.showNotification(push.title || "chat-gateway", {
      body: push.body ?? "",
      icon: "/icon-192.png",
      // One notification per message or ask: a push sent again replaces it instead of stacking.
      tag: push.message_id ?? push.picker_id ?? undefined,
      data: { lane },
    }),
  );
});

/** The URL of a lane: the app opens it at start (src/pwa.ts `laneFromUrl`). */
function laneUrl(lane: { chat_id: string; thread_id: string | null } | undefined): string {
  if (!lane) return "/";
  const query = new URLSearchParams({ chat: lane.chat_id });
  if (lane.thread_id) query.set("thread", lane.thread_id);
  return `/?${query}`;
}

/** Focuses an open window of the app and asks it to show the lane, or opens one at the lane's URL. */
async function openLane(lane: { chat_id: string; thread_id: string | null } | undefined): Promise<void> {
  const windows = await sw.clients.matchAll({ type: "window", includeUncontrolled: true });
  const open = windows.find((w) => new URL(w.url).origin === location.origin);
  if (!open) {
    await sw.clients.openWindow(laneUrl(lane));
    return;
  }
  if (lane) open.postMessage({ type: "open-lane", chat_id: lane.chat_id, thread_id: lane.thread_id });
  // Outside a click (a test calling openLane) the browser refuses focus; the lane opens anyway.
  await open.focus().catch(() => undefined);
}
// On the worker's global scope too: nothing can click a notification in a headless browser, so the
// browser test calls what a click calls.
(self as unknown as { openLane: typeof openLane }).openLane = openLane;

sw.addEventListener("notificationclick", (event: NotificationEvent) => {
  event.notification.close();
  event.waitUntil(
    openLane((event.notification.data as { lane?: { chat_id: string; thread_id: string | null } } | null)?.lane),
  );
});

export {};
