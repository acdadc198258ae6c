// Messages on their way to the gateway: while the connection is down the client holds a send and
// retries it once it is back (the `client_msg_id` keeps it stored once). They show here, above the
// message box, until the gateway has them; from then on a message that waits behind a running
// answer is in the lane's queue, shown on every device (docs/PROTOCOL.md §14.4).
import type { GatewayClient, MessagePayload, SendInput, SendOptions } from "chat-gateway/client";
import { clear, h } from "../dom.js";

/** How long a send made while offline waits for the connection to come back. */
const OFFLINE_WAIT_MS = 10 * 60_000;

export class PendingSends {
  readonly el = h("ul", { class: "send-queue", "aria-label": "Messages not yet sent" });
  readonly status = h("p", { class: "visually-hidden", role: "status" });
  readonly #client: GatewayClient;
  /** The texts on their way, by the order they were sent in. */
  readonly #items = new Map<number, string>();
  #next = 0;

  constructor(client: GatewayClient) {
    this.#client = client;
    this.el.hidden = true;
  }

  /**
   * Send, showing the message here from this moment until the gateway has it
   * (docs/PROTOCOL.md §21): offline too, and over a socket that looks open but died, it waits here and goes out when
   * the connection is back, stored once (the client retries with the same `client_msg_id`).
   */
  async send(input: SendInput, options: SendOptions = {}): Promise<MessagePayload> {
    const id = ++this.#next;
    this.#items.set(id, input.text || `${input.media_refs?.length ?? 0} attachment(s)`);
    if (this.#client.state !== "open")
      this.status.textContent = "Waiting for the connection: it is sent when it is back.";
    this.render();
    try {
      return await this.#client.sendMessage(input, { ...options, timeoutMs: OFFLINE_WAIT_MS });
    } finally {
      this.#items.delete(id);
      this.render();
    }
  }

  /** Draw the waiting messages; the connection's state says whether they are being sent or wait for it. */
  render(): void {
    clear(this.el);
    this.el.hidden = this.#items.size === 0;
    const open = this.#client.state === "open";
    // Open, a send is answered in milliseconds: its row fades in late, so it shows only when the
    // answer is slow (a socket that died unnoticed), instead of flashing on every send.
    this.el.classList.toggle("while-open", open);
    for (const text of this.#items.values()) {
      this.el.append(
        h(
          "li",
          { class: "pending" },
          h("span", { class: "pending-state" }, open ? "Sending…" : "Waiting for connection"),
          h("span", { class: "pending-text" }, text),
        ),
      );
    }
  }
}
