// Entry point of the web UI: ask whether login is on, then show the sign-in screen or the app.
import { App } from "./app.js";
import { authStatus, handleUnauthorized, Unauthorized } from "./api.js";
import { h } from "./dom.js";
import { infoDialog } from "./dialog.js";
import { pairFromUrl } from "./pairing.js";
import { retrySoon } from "./network.js";
import { registerServiceWorker, unsubscribePush } from "./pwa.js";
import { showSignIn } from "./signin.js";
import { followTheme } from "./theme.js";

const root = document.getElementById("root")!;
let app: App | undefined;

/**
 * How often an open sign-in screen asks whether login is still on (ms). Removing the last user
 * turns login off (docs/PROTOCOL.md §9), and then no sign-in can succeed: the tab must notice.
 */
const LOGIN_CHECK_MS = 2_000;
let loginCheck: ReturnType<typeof setInterval> | undefined;

/** Login turned off while the sign-in screen shows: open the app in local mode instead. */
async function openIfLoginOff(): Promise<void> {
  const status = await authStatus().catch(() => undefined);
  if (status && !status.enabled && app === undefined) startApp(null);
}

/** The user of the app on screen: null in local mode (no session), undefined when none runs. */
let appUser: string | null | undefined;
/** The sign-in form is on screen. */
let signingIn = false;

/**
 * A 401 from the socket or the API: "session ended" only when there was a session; a tab in local
 * mode meets login that was just turned on. The socket and a request often both answer 401 at
 * once: the form is drawn for the first only, and its notice is not replaced.
 */
function unauthorized(): void {
  // Signing out, the app is closed before the logout: the form it asks for says so instead.
  if (signingIn || app?.destroyed) return;
  // The credential ended (a revoked device, a password change): the push service forgets this
  // browser's subscription, so the gateway's next push to it meets 410 and drops it (docs/PROTOCOL.md §16).
  void unsubscribePush().catch(() => undefined);
  if (appUser === undefined) return signIn();
  signIn(appUser === null ? "Login is on now: please sign in." : "Your session has ended. Please sign in again.");
}

function signIn(notice?: string): void {
  app?.destroy();
  app = undefined;
  appUser = undefined;
  signingIn = true;
  showSignIn(
    root,
    notice,
    (user) => startApp(user),
    () => void openIfLoginOff(),
  );
  clearInterval(loginCheck);
  loginCheck = setInterval(() => void openIfLoginOff(), LOGIN_CHECK_MS);
  void openIfLoginOff();
}

function startApp(user: string | null): void {
  clearInterval(loginCheck);
  signingIn = false;
  app?.destroy();
  appUser = user;
  app = new App({
    root,
    user,
    onUnauthorized: unauthorized,
    onSignedOut: () => signIn("You are signed out."),
  });
  void app.start();
}

followTheme();
handleUnauthorized(unauthorized);
registerServiceWorker();

/** Waits between starts while the server cannot be reached (ms); the last one repeats. */
const BOOT_RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

async function boot(tries = 0): Promise<void> {
  try {
    let status = await authStatus();
    const pairing = await pairFromUrl(status.user);
    if (pairing !== undefined) status = await authStatus();
    if (status.enabled && !status.user) return signIn(pairing?.failed);
    startApp(status.user);
    if (pairing?.failed) infoDialog("Pairing failed", [h("p", null, pairing.failed)]);
  } catch (error) {
    if (error instanceof Unauthorized) return;
    unreachable((error as Error).message, tries);
  }
}

/**
 * The server cannot be reached (an app opened offline from its cached shell): say so, and start
 * again by itself, at once when the network or the app comes back (docs/PROTOCOL.md §21).
 */
function unreachable(message: string, tries: number): void {
  const wait = BOOT_RETRY_MS[Math.min(tries, BOOT_RETRY_MS.length - 1)];
  const retry = h("button", { type: "button", class: "secondary" }, "Try again now");
  const why = navigator.onLine ? `: ${message}` : " while this device is offline.";
  const next = navigator.onLine ? `Trying again in ${wait / 1000} s…` : "Trying again when the network is back…";
  root.replaceChildren(
    h(
      "main",
      { class: "signin" },
      h(
        "div",
        { class: "signin-form" },
        h("p", { role: "alert" }, `The server cannot be reached${why}`),
        h("p", { class: "signin-notice" }, next),
        retry,
      ),
    ),
  );
  let done = false;
  const again = (fresh: boolean) => {
    if (done) return;
    done = true;
    void boot(fresh ? 0 : tries + 1);
  };
  retry.addEventListener("click", () => again(true));
  retrySoon(wait, again);
}

void boot();
