// A Web Push as the service worker shows it, and an ask answered from its action buttons
// (docs/PROTOCOL.md §21). The payload is the gateway's (encrypted to this browser's subscription),
// but it is still checked: a button's token is posted only to an ask's `act` path on this origin,
// and only in a body.

/** What the gateway's Web Push sender posts (chat-gateway/push/webpush `WebPushPayload`). */
export interface Payload {
  title?: string;
  body?: string;
  chat_id?: string;
  thread_id?: string | null;
  message_id?: string;
  picker_id?: string;
  /** The RFC 8030 declarative notification (`web_push: 8030`), which a browser shows by itself when no worker runs. */
  notification?: { title?: string; body?: string; navigate?: string; tag?: string };
  /** An ask's answers, one button each; each token is the credential of that one answer. */
  actions?: Action[];
  /** A clearing push: it replaces the notification with the same tag ("Approved on …"). */
  clear?: boolean;
}

/** One action button of an ask's push. */
export interface Action {
  option_id: string;
  title: string;
  token: string;
  url: string;
}

type Lane = { chat_id: string; thread_id: string | null };

/** What a shown notification keeps for its click. */
export interface ShownData {
  lane?: Lane;
  /** The buttons' tokens and URLs, by `option_id` (the button's `action`). */
  actions?: Record<string, { token: string; url: string }>;
}

/** A notification to show: `showNotification(title, options)`. */
export interface Shown {
  title: string;
  options: NotificationOptions & { actions?: Array<{ action: string; title: string }> };
}

/** The longest token posted from a button; the gateway's are far shorter. */
const MAX_TOKEN_CHARS = 512;
/** How long a button's answer may take before the notification says it did not go through (ms). */
const ANSWER_TIMEOUT_MS = 15_000;

/** The notification of a push: its text, its tag (one per message or ask), and its buttons. */
export function notificationOf(push: Payload): Shown {
  const note = typeof push.notification === "object" && push.notification !== null ? push.notification : {};
  const lane = push.chat_id ? { chat_id: push.chat_id, thread_id: push.thread_id ?? null } : undefined;
  const tag = note.tag ?? push.message_id ?? push.picker_id ?? undefined;
  const base = { body: note.body ?? push.body ?? "", icon: "/icon-192.png", tag };
  const title = note.title || push.title || "chat-gateway";
  // A clear replaces what the other device showed, quietly: the person already acted elsewhere.
  if (push.clear === true) return { title, options: { ...base, silent: true, data: { lane } } };
  const actions = (Array.isArray(push.actions) ? push.actions : []).filter(usable);
  if (actions.length === 0) return { title, options: { ...base, data: { lane } } };
  const data: ShownData = {
    lane,
    actions: Object.fromEntries(actions.map((a) => [a.option_id, { token: a.token, url: a.url }])),
  };
  // An ask waits for the person: it stays until answered.
  const buttons = actions.map((a) => ({ action: a.option_id, title: a.title }));
  return { title, options: { ...base, requireInteraction: true, actions: buttons, data } };
}

/** A button the worker may answer with: strings, a bounded token, and an ask's `act` URL with no query. */
function usable(action: Action): boolean {
  if (typeof action !== "object" || action === null) return false;
  const { option_id, title, token, url } = action;
  if (![option_id, title, token, url].every((v) => typeof v === "string" && v.length > 0)) return false;
  if (token.length > MAX_TOKEN_CHARS) return false;
  return actTarget(url) !== undefined;
}

/**
 * Where a button posts: the action URL's path, on this worker's own origin. The page's CSP lets the
 * worker reach only its origin (`connect-src 'self'`), and the gateway's public URL may name
 * another origin of the same server (the one the owner's devices last connected through); the token
 * is bound to the push target, not to an origin. Undefined when the URL is not an ask's `act`.
 */
function actTarget(url: string): URL | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url, location.origin);
  } catch {
    return undefined;
  }
  if (!/^\/api\/asks\/[^/]+\/act$/.test(parsed.pathname) || parsed.search !== "" || parsed.hash !== "")
    return undefined;
  return new URL(parsed.pathname, location.origin);
}

/** How a button's answer went: `POST {url} {token}` answered 200, 410, 401, or not at all. */
export type Outcome = "answered" | "gone" | "refused" | "unreachable";

/** Post the button's token to its ask (the token in the body, never in a URL; no cookies). */
export async function answer(action: { token: string; url: string }): Promise<Outcome> {
  const target = actTarget(action.url);
  if (!target) return "refused";
  try {
    const response = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: action.token }),
      credentials: "omit",
      cache: "no-store",
      // A redirect would carry the token elsewhere.
      redirect: "error",
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
    if (response.ok) return "answered";
    if (response.status === 410) return "gone";
    if (response.status === 401) return "refused";
    return "unreachable";
  } catch {
    return "unreachable";
  }
}

/** The notification that replaces one whose button could not answer: same tag, no buttons, why. */
export function afterAnswer(
  shown: { title: string; tag: string },
  data: ShownData,
  outcome: Exclude<Outcome, "answered">,
): Shown {
  const body = {
    gone: "Already answered elsewhere, or no longer open.",
    refused: "This button no longer works. Open the app to answer.",
    unreachable: "Could not reach the server. Open the app to answer.",
  }[outcome];
  return { title: shown.title, options: { body, icon: "/icon-192.png", tag: shown.tag, data: { lane: data.lane } } };
}
