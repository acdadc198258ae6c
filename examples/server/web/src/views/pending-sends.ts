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
  readonly #items = new Set<string>();

  constructor(client: GatewayClient) {
    this.#client = client;
    this.el.hidden = true;
  }

  /** Send, showing the message here while the connection is down. */
  async send(input: SendInput, options: SendOptions = {}): Promise<MessagePayload> {
    if (this.#client.state === "open") return this.#client.sendMessage(input, options);
    const text = input.text || `${input.media_refs?.length ?? 0} attachment(s)`;
    this.#items.add(text);
    this.status.textContent = "Waiting for the connection: it is sent when it is back.";
    this.render();
    try {
      return await this.#client.sendMessage(input, { ...options, timeoutMs: OFFLINE_WAIT_MS });
    } finally {
      this.#items.delete(text);
      this.render();
    }
  }

  render(): void {
    clear(this.el);
    this.el.hidden = this.#items.size === 0;
    for (const text of this.#items) {
      this.el.append(
        h(
          "li",
          { class: "pending" },
          h("span", { class: "pending-state" }, "Waiting for connection"),
          h("span", { class: "pending-text" }, text),
        ),
      );
    }
  }
}
