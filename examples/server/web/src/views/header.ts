// The conversation header: the channel's avatar, name and tags, and its actions menu.
import type { Channel } from "chat-gateway";
import { avatar } from "../avatar.js";
import { clear, h, icon } from "../dom.js";
import type { Store } from "../store.js";

/** Channel changes the header's menu offers (channel-actions.ts). */
export interface ChannelMenuActions {
  update(ch: Channel, change: { name?: string; archived?: boolean; favorite?: boolean }): Promise<void>;
  createThread(parent: Channel): Promise<void>;
  rename(ch: Channel): Promise<void>;
  setDefault(ch: Channel): Promise<void>;
  remove(ch: Channel): Promise<void>;
}

function menuItem(label: string, run: () => void, cls = ""): HTMLElement {
  return h(
    "button",
    {
      type: "button",
      role: "menuitem",
      class: cls,
      onclick: (event: Event) => {
        (event.currentTarget as HTMLElement).closest("details")?.removeAttribute("open");
        run();
      },
    },
    label,
  );
}

function menuItems(ch: Channel, actions: ChannelMenuActions): HTMLElement[] {
  const items: HTMLElement[] = [];
  items.push(
    menuItem(
      ch.favorite ? "Remove from favorites" : "Add to favorites",
      () => void actions.update(ch, { favorite: !ch.favorite }),
    ),
  );
  if (ch.kind !== "thread" && !ch.automation) items.push(menuItem("New thread", () => void actions.createThread(ch)));
  items.push(menuItem("Rename…", () => void actions.rename(ch)));
  if (!ch.is_default)
    items.push(
      menuItem(ch.archived ? "Unarchive" : "Archive", () => void actions.update(ch, { archived: !ch.archived })),
    );
  if (ch.kind !== "thread" && !ch.is_default && !ch.automation)
    items.push(menuItem("Set as default", () => void actions.setDefault(ch)));
  if (ch.kind !== "default" && !ch.is_default) items.push(menuItem("Delete…", () => void actions.remove(ch), "danger"));
  return items;
}

export class HeaderView {
  readonly el = h("div", { class: "conv-header" });
  readonly #store: Store;
  readonly #actions: ChannelMenuActions;

  constructor(store: Store, actions: ChannelMenuActions) {
    this.#store = store;
    this.#actions = actions;
  }

  /** Re-render when the changed channel is the one on screen. */
  channelChanged(chatId: string): void {
    const lane = this.#store.current;
    if (lane && (lane.thread_id ?? lane.chat_id) === chatId) this.render();
  }

  render(): void {
    clear(this.el);
    const lane = this.#store.current;
    const ch = lane && this.#store.channelOf(lane);
    if (!lane || !ch) return;
    const parent = ch.kind === "thread" ? this.#store.channels.get(ch.parent_chat_id ?? "") : undefined;
    document.title = `${ch.name} · chat-gateway`;
    this.el.append(
      avatar(parent ?? ch, "large"),
      h(
        "div",
        { class: "conv-title" },
        h("h1", null, parent ? h("span", { class: "parent-name" }, `${parent.name} › `) : null, ch.name),
        h(
          "div",
          { class: "conv-tags" },
          ch.is_default ? h("span", { class: "tag" }, "default") : null,
          ch.automation ? h("span", { class: "tag" }, "automation · read-only") : null,
          ch.archived ? h("span", { class: "tag" }, "archived") : null,
          ch.favorite ? h("span", { class: "tag" }, "★ favorite") : null,
        ),
      ),
      h(
        "details",
        { class: "menu" },
        h("summary", { "aria-label": "Channel actions", title: "Channel actions" }, icon("more")),
        h("div", { class: "menu-items", role: "menu" }, menuItems(ch, this.#actions)),
      ),
    );
  }
}
