// The web UI's service worker (docs/PROTOCOL.md §16, §21): shows a Web Push as a notification,
// with an ask's action buttons answered from here by `fetch`, replaces it when a clearing push
// comes, opens its lane on a click, and keeps the app shell for offline starts. API answers (/api/, media
// included) and the socket (/ws/) never go through its cache: they are the user's data, and a
// stale copy of them would show a conversation that is not the real one.

import { afterAnswer, answer, notificationOf, type Payload, type ShownData } from "./push-notification.js";

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
  /** The action button clicked; "" for the notification itself. */
  action: string;
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
  const shown = notificationOf(payloadOf(event));
  event.waitUntil(sw.registration.showNotification(shown.title, shown.options));
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

/**
 * What a click does: an action button answers the ask from here (docs/PROTOCOL.md §21) and the
 * notification closes, or says why not; the notification itself opens its lane.
 */
async function clicked(notification: Notification, action: string): Promise<void> {
  const data = (notification.data ?? {}) as ShownData;
  const chosen = action ? data.actions?.[action] : undefined;
  if (!chosen) {
    notification.close();
    return openLane(data.lane);
  }
  const outcome = await answer(chosen);
  if (outcome === "answered") return notification.close();
  // Shown again under the same tag, without buttons: the answer did not go through from here.
  const again = afterAnswer(notification, data, outcome);
  await sw.registration.showNotification(again.title, again.options);
}
// On the worker's global scope too: a headless browser has no notification to click, and a
// script-made NotificationEvent cannot `waitUntil`, so the browser test calls what a click calls.
(self as unknown as { clicked: typeof clicked }).clicked = clicked;

sw.addEventListener("notificationclick", (event: NotificationEvent) => {
  event.waitUntil(clicked(event.notification, event.action));
});
