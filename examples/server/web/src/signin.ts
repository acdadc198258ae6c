// The sign-in screen (docs/PROTOCOL.md §9): shown when login protection is on and there is no session,
// and again whenever a request or the socket answers 401. A refused sign-in calls `onRefused`, since
// it may mean that login is off now (no users left), where no sign-in can succeed.
import { login } from "./api.js";
import { clear, h } from "./dom.js";

export function showSignIn(
  root: HTMLElement,
  notice: string | undefined,
  onSignedIn: (user: string) => void,
  onRefused: () => void = () => undefined,
): void {
  clear(root);
  document.title = "Sign in · chat-gateway";
  const username = h("input", {
    id: "signin-user",
    name: "username",
    type: "text",
    autocomplete: "username",
    required: true,
    maxlength: 32,
    autocapitalize: "none",
    spellcheck: "false",
  });
  const password = h("input", {
    id: "signin-password",
    name: "password",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const error = h("p", { class: "signin-error", role: "alert" });
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "signin-form", "aria-labelledby": "signin-title" },
    h("img", { src: "/icon.svg", alt: "", class: "signin-logo", width: 48, height: 48 }),
    h("h1", { id: "signin-title" }, "Sign in to chat-gateway"),
    notice ? h("p", { class: "signin-notice", role: "status" }, notice) : null,
    h("label", { for: "signin-user" }, "Username"),
    username,
    h("label", { for: "signin-password" }, "Password"),
    password,
    error,
    submit,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    error.textContent = "";
    submit.disabled = true;
    submit.textContent = "Signing in…";
    login(username.value.trim(), password.value).then(
      (result) => onSignedIn(result.username),
      (failure: Error & { status?: number; retryAfter?: number }) => {
        submit.disabled = false;
        submit.textContent = "Sign in";
        if (failure.status === 429) {
          const minutes = Math.max(1, Math.ceil((failure.retryAfter ?? 60) / 60));
          error.textContent = `Too many failed attempts. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`;
        } else if (failure.status === 401) {
          error.textContent = "Wrong username or password.";
          onRefused();
        } else {
          error.textContent = `Could not sign in: ${failure.message}`;
        }
        password.select();
      },
    );
  });
  root.append(h("main", { class: "signin" }, form));
  username.focus();
}
