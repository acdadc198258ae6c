// The Stop button shown while an answer is written in the lane on screen: it sends `/stop`,
// which ends the lane's running turn at once (docs/PROTOCOL.md §4.4).
import type { GatewayClient } from "chat-gateway/client";
import { h } from "../dom.js";
import type { Store } from "../store.js";
import type { Toasts } from "../toasts.js";
import { answerRunning } from "./send-queue.js";

export class StopButton {
  readonly el = h("button", { type: "button", class: "stop", hidden: true, title: "Stop the answer being written" }, h("span", { class: "stop-square", "aria-hidden": "true" }), "Stop");
  readonly #client: GatewayClient;
  readonly #store: Store;

  constructor(client: GatewayClient, store: Store, toasts: Toasts) {
    this.#client = client;
    this.#store = store;
    this.el.addEventListener("click", () => {
      const lane = this.#store.current;
      if (!lane) return;
      this.el.disabled = true;
      void toasts.guard("Stop", () => this.#client.sendMessage({ chat_id: lane.chat_id, thread_id: lane.thread_id, text: "/stop" })).finally(() => (this.el.disabled = false));
    });
  }

  /** Show the button while the lane on screen has an answer running. */
  update(): void {
    const lane = this.#store.current;
    this.el.hidden = !lane || !answerRunning(lane);
  }
}
