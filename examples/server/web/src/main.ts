// Entry point of the web UI: ask whether login is on, then show the sign-in screen or the app.
import { App } from "./app.js";
import { authStatus, handleUnauthorized, Unauthorized } from "./api.js";
import { h } from "./dom.js";
import { showSignIn } from "./signin.js";
import { followTheme } from "./theme.js";

const root = document.getElementById("root")!;
let app: App | undefined;

function signIn(notice?: string): void {
  app?.destroy();
  app = undefined;
  showSignIn(root, notice, (user) => startApp(user));
}

function startApp(user: string | null): void {
  app?.destroy();
  app = new App({
    root,
    user,
    onUnauthorized: () => signIn("Your session has ended. Please sign in again."),
    onSignedOut: () => signIn("You are signed out."),
  });
  void app.start();
}

followTheme();
handleUnauthorized(() => signIn("Your session has ended. Please sign in again."));

async function boot(): Promise<void> {
  try {
    const status = await authStatus();
    if (status.enabled && !status.user) signIn();
    else startApp(status.user);
  } catch (error) {
    if (error instanceof Unauthorized) return;
    root.replaceChildren(h("main", { class: "signin" }, h("p", { role: "alert" }, `The server cannot be reached: ${(error as Error).message}`)));
  }
}

void boot();
