// Search results beside the conversation; a hit opens its lane, pages back until the message is
// loaded, and highlights it.
import type { SearchHit } from "chat-gateway";
import type { GatewayClient } from "chat-gateway/client";
import { clear, formatTime, h } from "../dom.js";
import type { Lane, Store } from "../store.js";
import type { Toasts } from "../toasts.js";
import { markedSnippet } from "./search-snippet.js";

export interface SearchDeps {
  client: GatewayClient;
  store: Store;
  toasts: Toasts;
  openLane(chatId: string, threadId: string | null): Promise<void>;
  loadOlder(lane: Lane): Promise<void>;
  /** The element of a message of the lane on screen. */
  elementOf(messageId: string): HTMLElement | undefined;
}

export class SearchView {
  readonly el = h("aside", { class: "search-results", "aria-label": "Search results", hidden: true });
  readonly #deps: SearchDeps;

  constructor(deps: SearchDeps) {
    this.#deps = deps;
  }

  /** Close the results (the search box was cleared). */
  close(): void {
    this.el.hidden = true;
    clear(this.el);
  }

  async search(query: string): Promise<void> {
    const box = this.el;
    if (!query.trim()) return this.close();
    clear(box);
    box.hidden = false;
    const close = h(
      "button",
      { type: "button", class: "icon small", "aria-label": "Close search results", onclick: () => (box.hidden = true) },
      "×",
    );
    box.append(h("div", { class: "search-head" }, h("h2", null, "Search results"), close));
    const status = h("p", { class: "empty" }, "Searching…");
    box.append(status);
    const result = await this.#deps.toasts.guard("Search", () =>
      this.#deps.client.request("search", { query, scope: "all", limit: 50 }),
    );
    status.remove();
    if (!result) return;
    if (result.hits.length === 0) {
      box.append(h("p", { class: "empty" }, `Nothing found for “${query}”.`));
      return;
    }
    box.append(
      h(
        "ul",
        { class: "hits" },
        result.hits.map((hit) => this.#hitEl(hit, query)),
      ),
    );
  }

  #hitEl(hit: SearchHit, query: string): HTMLElement {
    const ch = this.#deps.store.channels.get(hit.thread_id ?? hit.chat_id);
    return h(
      "li",
      null,
      h(
        "button",
        { type: "button", class: "hit", onclick: () => void this.#jumpTo(hit) },
        h(
          "span",
          { class: "hit-where" },
          ch?.name ?? hit.chat_id,
          " · ",
          hit.role === "user" ? "You" : "Assistant",
          " · ",
          formatTime(hit.ts),
        ),
        h("span", { class: "hit-snippet" }, markedSnippet(hit.snippet, query)),
      ),
    );
  }

  async #jumpTo(hit: SearchHit): Promise<void> {
    await this.#deps.openLane(hit.chat_id, hit.thread_id);
    const lane = this.#deps.store.current!;
    while (!lane.byId.has(hit.message_id) && lane.pager.hasMore) await this.#deps.loadOlder(lane);
    const el = this.#deps.elementOf(hit.message_id);
    if (!el) {
      this.#deps.toasts.show("That message is no longer there.");
      return;
    }
    if (window.matchMedia("(max-width: 900px)").matches) this.el.hidden = true;
    el.scrollIntoView({ block: "center" });
    el.classList.add("highlight");
    el.focus({ preventScroll: true });
    setTimeout(() => el.classList.remove("highlight"), 3000);
  }
}
