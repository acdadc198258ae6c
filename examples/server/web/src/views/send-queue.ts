// Messages the user sent while an answer was still being written in that lane, or while offline:
// they wait here, visible and cancellable, and go out one at a time once the lane is free and the
// connection is open. The gateway runs a lane's turns in order (docs/PROTOCOL.md §4.2) and a turn
// it accepted cannot be taken back, so the UI holds them until they can start.
import type { GatewayClient, SendInput } from "chat-gateway/client";
import { clear, h } from "../dom.js";
import { laneKey, type Lane, type LaneRef, type Store } from "../store.js";
import type { Toasts } from "../toasts.js";

interface Queued {
  id: number;
  lane: LaneRef;
  input: SendInput;
}

export interface SendQueueDeps {
  client: GatewayClient;
  store: Store;
  toasts: Toasts;
  /** A queued message could not be sent: give its text back to the user. */
  onFailed(text: string): void;
}

/** Whether the agent is still answering in a lane (typing, or an answer streaming). */
export function answerRunning(lane: Lane): boolean {
  return lane.typing || lane.messages.some((m) => m.streaming && m.role === "assistant");
}

export class SendQueue {
  readonly el = h("ul", { class: "send-queue", "aria-label": "Queued messages" });
  readonly #status = h("p", { class: "visually-hidden", role: "status" });
  readonly #deps: SendQueueDeps;
  #items: Queued[] = [];
  #next = 0;
  #sending = false;

  constructor(deps: SendQueueDeps) {
    this.#deps = deps;
    this.el.hidden = true;
  }

  /** The live region that announces queueing; placed once beside the list. */
  get status(): HTMLElement {
    return this.#status;
  }

  /** Whether a message for this lane must wait (offline, an answer running, or older ones waiting). */
  mustWait(ref: LaneRef, startsThread: boolean): boolean {
    if (this.#deps.client.state !== "open" || this.#items.some((q) => this.#same(q.lane, ref))) return true;
    return !startsThread && answerRunning(this.#deps.store.lane(ref.chat_id, ref.thread_id));
  }

  add(lane: LaneRef, input: SendInput): void {
    this.#items.push({ id: ++this.#next, lane: { chat_id: lane.chat_id, thread_id: lane.thread_id }, input });
    this.#status.textContent = this.#deps.client.state === "open" ? "Queued: it is sent when the answer ends." : "Queued: it is sent when the connection is back.";
    this.#render();
  }

  /** Send the first message whose lane is free, if the connection is open. */
  async flush(): Promise<void> {
    if (this.#sending) return;
    this.#render(); // the connection may have changed what the items wait for
    if (this.#deps.client.state !== "open") return;
    const item = this.#items.find((q) => !answerRunning(this.#deps.store.lane(q.lane.chat_id, q.lane.thread_id)));
    if (!item) return;
    this.#items = this.#items.filter((q) => q !== item);
    this.#render();
    this.#sending = true;
    try {
      await this.#deps.client.sendMessage(item.input);
    } catch (error) {
      this.#deps.toasts.show(`Not sent: ${(error as Error).message}`);
      this.#deps.onFailed(item.input.text ?? "");
    } finally {
      this.#sending = false;
    }
    void this.flush();
  }

  #same(a: LaneRef, b: LaneRef): boolean {
    return laneKey(a.chat_id, a.thread_id) === laneKey(b.chat_id, b.thread_id);
  }

  #cancel(id: number): void {
    this.#items = this.#items.filter((q) => q.id !== id);
    this.#status.textContent = "Queued message cancelled.";
    this.#render();
  }

  #render(): void {
    clear(this.el);
    this.el.hidden = this.#items.length === 0;
    for (const q of this.#items) {
      const text = q.input.text || `${q.input.media_refs?.length ?? 0} attachment(s)`;
      this.el.append(
        h(
          "li",
          { class: "queued", dataset: { queued: String(q.id) } },
          h("span", { class: "queued-state" }, this.#deps.client.state === "open" ? "Queued" : "Waiting for connection"),
          h("span", { class: "queued-text" }, text),
          h("button", { type: "button", class: "link", "aria-label": `Cancel queued message: ${text.slice(0, 40)}`, onclick: () => this.#cancel(q.id) }, "Cancel"),
        ),
      );
    }
  }
}
