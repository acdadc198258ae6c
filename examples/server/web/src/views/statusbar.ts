// The status bar: menu toggle, brand, connection state with "Retry now", search, settings and the
// signed-in account.
import type { ConnectionState, StateInfo } from "chat-gateway/client";
import { h, icon } from "../dom.js";

export interface StatusbarActions {
  /** Null when login protection is off. */
  user: string | null;
  retry(): void;
  search(query: string): void;
  settings(): void;
  signOut(): void;
}

/**
 * What the connection indicator says. Between attempts the app is offline as far as a person can
 * tell, and says so (docs/PROTOCOL.md §21); without a network it waits for one instead of counting.
 */
function connLabel(state: ConnectionState, info: StateInfo, online: boolean): string {
  const retry = info.retryInMs !== undefined ? ` in ${Math.max(1, Math.round(info.retryInMs / 1000))} s` : "";
  const labels: Record<ConnectionState, string> = {
    connecting: "Connecting…",
    syncing: "Catching up…",
    open: "Connected",
    reconnecting: online ? `Offline: reconnecting${retry}…` : "Offline: waiting for the network…",
    unauthorized: "Signed out",
    closed: "Offline",
  };
  return labels[state];
}

export class Statusbar {
  readonly #conn = h("span", { class: "conn", role: "status", "aria-live": "polite" });
  readonly #retry = h("button", { type: "button", class: "link", hidden: true }, "Retry now");
  readonly el: HTMLElement;

  constructor(actions: StatusbarActions) {
    const search = h("input", {
      type: "search",
      name: "q",
      placeholder: "Search",
      "aria-label": "Search messages",
      autocomplete: "off",
    });
    const searchForm = h("form", { class: "search", role: "search" }, search);
    searchForm.addEventListener("submit", (event) => {
      event.preventDefault();
      actions.search(search.value);
    });
    // Clearing the box (its × or deleting the text) closes the results.
    search.addEventListener("input", () => {
      if (search.value === "") actions.search("");
    });
    const userBox = actions.user
      ? h(
          "div",
          { class: "account" },
          h(
            "span",
            { class: "user-name", title: "Signed in" },
            h("span", { class: "visually-hidden" }, "Signed in as "),
            actions.user,
          ),
          h("button", { type: "button", class: "secondary small", onclick: () => actions.signOut() }, "Sign out"),
        )
      : null;
    this.el = h(
      "header",
      { class: "statusbar" },
      h(
        "button",
        {
          type: "button",
          class: "icon menu-toggle",
          "aria-label": "Show channels",
          onclick: () => document.body.classList.toggle("show-sidebar"),
        },
        icon("menu"),
      ),
      h("span", { class: "brand" }, h("img", { src: "/icon.svg", alt: "", width: 20, height: 20 }), " chat-gateway"),
      h("span", { class: "conn-box" }, this.#conn, this.#retry),
      searchForm,
      h(
        "button",
        {
          type: "button",
          class: "icon",
          "aria-label": "Settings",
          title: "Settings",
          onclick: () => actions.settings(),
        },
        icon("gear"),
      ),
      userBox,
    );
    this.#retry.addEventListener("click", () => actions.retry());
  }

  /** Show the connection's state; `online` is the browser's `navigator.onLine`. */
  setConnection(state: ConnectionState, info: StateInfo, online: boolean): void {
    this.#conn.textContent = connLabel(state, info, online);
    this.#conn.dataset.state = state;
    this.#retry.hidden = state !== "reconnecting";
  }
}
