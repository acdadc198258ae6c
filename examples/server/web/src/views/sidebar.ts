// The channel list: active channels with their threads, favorites first, unread badges, the
// notification badge of new webhook and scheduled posts, and the archived ones folded away.
import type { Channel } from "chat-gateway";
import { compareChannels } from "chat-gateway/protocol";
import { avatar } from "../avatar.js";
import { clear, h } from "../dom.js";
import type { LaneRef, Store } from "../store.js";

export interface SidebarActions {
  openLane(chatId: string, threadId: string | null): Promise<void>;
  /** Resolves true once a new channel is made and opened. */
  createChannel(): Promise<boolean>;
}

/** On a phone the list is a drawer over the conversation: a lane opened from it must not stay hidden. */
function closeDrawer(): void {
  document.body.classList.remove("show-sidebar");
}

function laneOf(c: Channel): LaneRef {
  return c.kind === "thread"
    ? { chat_id: c.parent_chat_id!, thread_id: c.chat_id }
    : { chat_id: c.chat_id, thread_id: null };
}

export class SidebarView {
  readonly el = h("nav", { class: "sidebar", "aria-label": "Channels" });
  readonly #store: Store;
  readonly #actions: SidebarActions;

  constructor(store: Store, actions: SidebarActions) {
    this.#store = store;
    this.#actions = actions;
  }

  render(): void {
    const channels = this.#store.channels;
    const all = [...channels.values()].sort(compareChannels);
    const top = all.filter((c) => c.kind !== "thread");
    const threadsOf = (id: string) => all.filter((c) => c.kind === "thread" && c.parent_chat_id === id);
    const tree = (list: Channel[], archived: boolean) =>
      h(
        "ul",
        { class: "channel-list" },
        list.map((c) => {
          const threads = threadsOf(c.chat_id).filter((t) => t.archived === archived || (archived && c.archived));
          return h(
            "li",
            null,
            this.#entry(c),
            threads.length
              ? h(
                  "ul",
                  { class: "threads" },
                  threads.map((t) => h("li", null, this.#entry(t))),
                )
              : null,
          );
        }),
      );
    const active = top.filter((c) => !c.archived);
    const archived = top.filter((c) => c.archived);
    // An archived thread of an active channel is listed under "Archived" too, with its parent's name.
    const archivedThreads = all.filter(
      (c) => c.kind === "thread" && c.archived && !channels.get(c.parent_chat_id ?? "")?.archived,
    );
    const archivedCount = archived.length + archivedThreads.length;
    clear(this.el);
    this.el.append(
      h(
        "div",
        { class: "sidebar-head" },
        h("h2", null, "Channels"),
        h("button", { type: "button", class: "small", onclick: () => void this.#create() }, "+ New"),
      ),
      tree(active, false),
      archivedCount
        ? h(
            "details",
            { class: "archived" },
            h("summary", null, `Archived (${archivedCount})`),
            tree(archived, true),
            archivedThreads.length
              ? h(
                  "ul",
                  { class: "channel-list" },
                  archivedThreads.map((t) => h("li", null, this.#entry(t))),
                )
              : null,
          )
        : "",
    );
  }

  async #create(): Promise<void> {
    if (await this.#actions.createChannel()) closeDrawer();
  }

  #entry(c: Channel): HTMLElement {
    const current = this.#store.current;
    const currentId = current ? (current.thread_id ?? current.chat_id) : undefined;
    const lane = laneOf(c);
    const unread = this.#store.unread(lane);
    const posts = c.kind === "thread" ? 0 : this.#store.posts(c.chat_id);
    return h(
      "button",
      {
        type: "button",
        class: `channel ${c.kind === "thread" ? "thread" : ""}`,
        "aria-current": c.chat_id === currentId ? "page" : undefined,
        dataset: { chatId: c.chat_id },
        onclick: () => {
          closeDrawer();
          void this.#actions.openLane(lane.chat_id, lane.thread_id);
        },
      },
      c.kind === "thread" ? h("span", { class: "thread-mark", "aria-hidden": "true" }, "↳") : avatar(c),
      h("span", { class: "channel-name" }, c.name),
      c.favorite
        ? h(
            "span",
            { class: "fav", title: "Favorite" },
            h("span", { "aria-hidden": "true" }, "★"),
            h("span", { class: "visually-hidden" }, "(favorite)"),
          )
        : null,
      c.automation ? h("span", { class: "tag", title: "Automation channel" }, "auto") : null,
      c.is_default ? h("span", { class: "tag", title: "Default channel" }, "default") : null,
      this.#store.waiting(lane)
        ? h(
            "span",
            { class: "badge ask-badge", title: "Waiting for your answer" },
            h("span", { "aria-hidden": "true" }, "?"),
            h("span", { class: "visually-hidden" }, " waiting for your answer"),
          )
        : null,
      unread > 0
        ? h("span", { class: "badge" }, String(unread), h("span", { class: "visually-hidden" }, " unread"))
        : null,
      posts > 0
        ? h(
            "span",
            { class: "badge post-badge", title: "New posts" },
            h("span", { "aria-hidden": "true" }, `🔔 ${posts}`),
            h("span", { class: "visually-hidden" }, `${posts} new posts`),
          )
        : null,
    );
  }
}
