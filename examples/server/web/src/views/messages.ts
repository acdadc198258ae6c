// The message log of the lane on screen: full renders, one-message re-renders, streamed text at
// most once per frame, and keeping the scroll position near the bottom.
import { clear, h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import type { Msg } from "../msg.js";
import type { Lane, Store } from "../store.js";
import { messageEl, type MessageContext } from "./message.js";

export class MessagesView {
  readonly el = h("div", { class: "messages", role: "log", "aria-label": "Messages", tabindex: 0 });
  readonly #store: Store;
  readonly #ctx: MessageContext;
  readonly #loadOlder: (lane: Lane) => Promise<void>;
  readonly #els = new Map<string, HTMLElement>();
  readonly #queued = new Set<string>();
  /** The open cards: they sit in the log right after the answer they belong to. */
  #attached: HTMLElement | undefined;
  #destroyed = false;

  constructor(store: Store, ctx: MessageContext, loadOlder: (lane: Lane) => Promise<void>) {
    this.#store = store;
    this.#ctx = ctx;
    this.#loadOlder = loadOlder;
    this.el.addEventListener("scroll", () => {
      const lane = this.#store.current;
      if (this.el.scrollTop < 120 && lane) void this.#loadOlder(lane);
    });
  }

  destroy(): void {
    this.#destroyed = true;
  }

  /** Keep `el` (the open cards) in the log, after the running answer, else at the end. */
  attach(el: HTMLElement): void {
    this.#attached = el;
    this.placeAttached();
  }

  placeAttached(): void {
    const attached = this.#attached;
    const lane = this.#store.current;
    if (!attached || !lane) return;
    const running = lane.messages.findLast((m) => m.role === "assistant" && m.streaming);
    const after = running && this.#els.get(running.message_id);
    if (after) after.after(attached);
    else this.el.append(attached);
  }

  /** The element of a message of the lane on screen. */
  elementOf(id: string): HTMLElement | undefined {
    return this.#els.get(id);
  }

  scrollToBottom(): void {
    this.el.scrollTop = this.el.scrollHeight;
  }

  /** Re-render everything and keep the distance from the bottom (older messages came in on top). */
  renderKeepingBottom(): void {
    const fromBottom = this.el.scrollHeight - this.el.scrollTop;
    this.render();
    this.el.scrollTop = this.el.scrollHeight - fromBottom;
  }

  render(): void {
    const lane = this.#store.current;
    clear(this.el);
    this.#els.clear();
    if (!lane) return;
    if (lane.loaded && lane.pager.hasMore) {
      this.el.append(
        h(
          "div",
          { class: "history-more" },
          h(
            "button",
            { type: "button", class: "link", onclick: () => void this.#loadOlder(lane) },
            "Load older messages",
          ),
        ),
      );
    } else if (lane.loaded && lane.messages.length === 0) {
      this.el.append(h("p", { class: "empty" }, "No messages yet. Say hello!"));
    } else if (lane.loaded) {
      this.el.append(h("p", { class: "history-start" }, "Start of the conversation"));
    }
    for (const msg of lane.messages) {
      const el = messageEl(msg, this.#ctx);
      this.#els.set(msg.message_id, el);
      this.el.append(el);
    }
    this.placeAttached();
  }

  remove(ids: string[]): void {
    for (const id of ids) {
      this.#els.get(id)?.remove();
      this.#els.delete(id);
    }
  }

  /** Re-render one message of a lane (or append it) when that lane is on screen. */
  rerender(lane: Lane, msg: Msg): void {
    if (lane !== this.#store.current) return;
    const stick = this.#nearBottom();
    const el = messageEl(msg, this.#ctx);
    const old = this.#els.get(msg.message_id);
    if (old) old.replaceWith(el);
    else {
      this.el.querySelector(".empty")?.remove();
      this.el.append(el);
    }
    this.#els.set(msg.message_id, el);
    if (!old) this.placeAttached();
    if (stick) this.scrollToBottom();
  }

  /** The lane's queue changed: re-render the user messages that started or stopped waiting. */
  refreshQueued(): void {
    const lane = this.#store.current;
    if (!lane) return;
    for (const msg of lane.messages) {
      if (msg.role !== "user" || msg.command) continue;
      const el = this.#els.get(msg.message_id);
      if (el && el.classList.contains("queued") !== this.#ctx.queued(msg)) this.rerender(lane, msg);
    }
  }

  /** A streamed update: re-render the text once per frame at most. */
  queueBody(lane: Lane, msg: Msg): void {
    if (lane !== this.#store.current || this.#queued.has(msg.message_id)) return;
    this.#queued.add(msg.message_id);
    requestAnimationFrame(() => {
      this.#queued.delete(msg.message_id);
      if (this.#destroyed || lane !== this.#store.current) return;
      this.#updateBody(lane, msg);
    });
  }

  #updateBody(lane: Lane, msg: Msg): void {
    const el = this.#els.get(msg.message_id);
    const body = el?.querySelector<HTMLElement>(".body");
    if (!el || !body) return this.rerender(lane, msg);
    const stick = this.#nearBottom();
    renderMarkdown(body, msg.text);
    if (msg.reasoning) {
      const reasoning = el.querySelector<HTMLElement>(".reasoning-text");
      if (reasoning) reasoning.textContent = msg.reasoning;
      else return this.rerender(lane, msg);
    }
    if (stick) this.scrollToBottom();
  }

  #nearBottom(): boolean {
    const box = this.el;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }
}
