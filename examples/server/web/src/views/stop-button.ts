// The Stop button shown while an answer is written in the lane on screen: it sends `turn.stop`,
// which ends the lane's running turn at once wherever it runs and stores nothing
// (docs/PROTOCOL.md §14.4).
import type { GatewayClient } from "chat-gateway/client";
import { h } from "../dom.js";
import type { Lane, Store } from "../store.js";
import type { Toasts } from "../toasts.js";

/** Whether the agent's turn runs in a lane: the gateway's running turns, an open card, typing, or an answer streaming. */
export function answerRunning(store: Store, lane: Lane): boolean {
  return (
    store.running(lane) ||
    store.waiting(lane) ||
    lane.typing ||
    lane.messages.some((m) => m.streaming && m.role === "assistant")
  );
}

export class StopButton {
  readonly el = h(
    "button",
    { type: "button", class: "stop", hidden: true, title: "Stop the answer being written" },
    h("span", { class: "stop-square", "aria-hidden": "true" }),
    "Stop",
  );
  readonly #store: Store;

  constructor(client: GatewayClient, store: Store, toasts: Toasts) {
    this.#store = store;
    this.el.addEventListener("click", () => {
      const lane = this.#store.current;
      if (!lane) return;
      this.el.disabled = true;
      void toasts.guard("Stop", () => client.stop(lane)).finally(() => (this.el.disabled = false));
    });
  }

  /** Show the button while the lane on screen has an answer running. */
  update(): void {
    const lane = this.#store.current;
    this.el.hidden = !lane || !answerRunning(this.#store, lane);
  }
}
