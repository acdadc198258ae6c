// The installable app's page side (docs/PROTOCOL.md §16): registers the service worker, opens the
// lane a notification names, and subscribes this browser to Web Push.
import { vapidKey } from "./api.js";
import type { LaneRef } from "./store.js";

/**
 * Registers /sw.js once the page is up and idle: installing it fetches the whole shell, which must
 * not compete with the app's first connect and history. The app works the same without it (an
 * old browser, a plain-HTTP host).
 */
export function registerServiceWorker(): void {
  if (!("serviceWorker" in navigator)) return;
  const register = () =>
    void navigator.serviceWorker
      .register("/sw.js", { scope: "/" })
      .catch((error: unknown) => console.warn("service worker not registered", error));
  const whenIdle = () =>
    "requestIdleCallback" in window ? requestIdleCallback(register, { timeout: 5_000 }) : setTimeout(register, 1_000);
  if (document.readyState === "complete") whenIdle();
  else window.addEventListener("load", whenIdle, { once: true });
}

/** The lane a notification opened the app at (`/?chat=…&thread=…`), taken off the address bar. */
export function laneFromUrl(): LaneRef | undefined {
  const params = new URLSearchParams(location.search);
  const chat = params.get("chat");
  if (!chat) return undefined;
  const lane = { chat_id: chat, thread_id: params.get("thread") || null };
  params.delete("chat");
  params.delete("thread");
  history.replaceState(null, "", `${location.pathname}${params.size ? `?${params}` : ""}${location.hash}`);
  return lane;
}

/** Calls `handler` when a notification of an open window is clicked; returns the unsubscribe. */
export function onOpenLane(handler: (lane: LaneRef) => void): () => void {
  if (!("serviceWorker" in navigator)) return () => undefined;
  const listener = (event: MessageEvent) => {
    const data = event.data as { type?: unknown; chat_id?: unknown; thread_id?: unknown } | null;
    if (data?.type !== "open-lane" || typeof data.chat_id !== "string") return;
    handler({ chat_id: data.chat_id, thread_id: typeof data.thread_id === "string" ? data.thread_id : null });
  };
  navigator.serviceWorker.addEventListener("message", listener);
  return () => navigator.serviceWorker.removeEventListener("message", listener);
}

/** True when this browser can receive Web Push. */
export function pushSupported(): boolean {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/** The subscription as the gateway takes it (`fcm.register {webpush}`). */
export interface SubscriptionJson {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

function asJson(subscription: PushSubscription): SubscriptionJson {
  const json = subscription.toJSON();
  return {
    endpoint: json.endpoint ?? subscription.endpoint,
    keys: { p256dh: json.keys?.p256dh ?? "", auth: json.keys?.auth ?? "" },
  };
}

/** This browser's subscription, when it has one and notifications are allowed. */
export async function currentSubscription(): Promise<SubscriptionJson | undefined> {
  if (!pushSupported() || Notification.permission !== "granted") return undefined;
  const registration = await navigator.serviceWorker.getRegistration("/");
  const subscription = await registration?.pushManager.getSubscription();
  return subscription ? asJson(subscription) : undefined;
}

/**
 * Asks for permission (call it from a click: browsers refuse otherwise) and subscribes with the
 * server's VAPID key. Rejects with a message a person can act on.
 */
export async function subscribePush(): Promise<SubscriptionJson> {
  if (!pushSupported()) throw new Error("This browser cannot receive push notifications.");
  const permission = await Notification.requestPermission();
  if (permission !== "granted")
    throw new Error("Notifications are blocked for this site; allow them in the browser's site settings.");
  const [registration, { public_key }] = await Promise.all([navigator.serviceWorker.ready, vapidKey()]);
  const key = Uint8Array.from(atob(public_key.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  return asJson(subscription);
}

/** Ends this browser's subscription (the gateway is told separately). */
export async function unsubscribePush(): Promise<void> {
  const registration = await navigator.serviceWorker.getRegistration("/");
  await (await registration?.pushManager.getSubscription())?.unsubscribe();
}
