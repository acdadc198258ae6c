// Marks what is on screen as read (docs/PROTOCOL.md §15): the newest message of the lane on screen
// that shows in the message log, and only while the tab is visible and focused, so a tab left open
// in the background never clears a badge, or cancels a push, for something nobody saw.
import type { GatewayClient } from "chat-gateway/client";
import type { Msg } from "./msg.js";
import type { Store } from "./store.js";

export class ReadMarker {
  readonly #client: GatewayClient;
  readonly #store: Store;
  readonly #log: HTMLElement;
  readonly #elementOf: (id: string) => HTMLElement | undefined;
  /** Per lane, the message last marked, so a scroll does not send the same read again. */
  readonly #sent = new Map<string, string>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    client: GatewayClient,
    store: Store,
    log: HTMLElement,
    elementOf: (id: string) => HTMLElement | undefined,
  ) {
    this.#client = client;
    this.#store = store;
    this.#log = log;
    this.#elementOf = elementOf;
    const later = () => this.schedule();
    window.addEventListener("focus", later);
    document.addEventListener("visibilitychange", later);
    log.addEventListener("scroll", later, { passive: true });
  }

  /** Look again soon (after a render, a scroll, the tab coming back): one look per burst. */
  schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#mark(), 150);
  }

  #mark(): void {
    if (document.visibilityState !== "visible" || !document.hasFocus()) return;
    const lane = this.#store.current;
    if (!lane?.loaded) return;
    const shown = lane.messages.findLast((m) => this.#readable(m) && this.#onScreen(m));
    if (!shown || this.#sent.get(lane.key) === shown.message_id) return;
    this.#sent.set(lane.key, shown.message_id);
    void this.#client
      .markRead({ chat_id: lane.chat_id, thread_id: lane.thread_id }, shown.message_id)
      .catch(() => this.#sent.delete(lane.key));
  }

  /** A stored message whose text is whole: not a running answer, not a command line. */
  #readable(m: Msg): boolean {
    return !m.streaming && !m.command && m.status !== "streaming";
  }

  #onScreen(m: Msg): boolean {
    const el = this.#elementOf(m.message_id);
    if (!el) return false;
    const box = this.#log.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    return r.bottom > box.top && r.top < box.bottom && r.height > 0;
  }
}
