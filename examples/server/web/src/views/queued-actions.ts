// What Cancel and "Send now" on a waiting message do. The queue is the gateway's, the same on every
// device (docs/PROTOCOL.md §14.4): Cancel deletes the waiting message, so its turn never runs;
// "Send now" deletes it and sends its text again with `when_busy: "interrupt"`, which stops the
// running answer and runs it next.
import type { GatewayClient } from "chat-gateway/client";
import type { Msg } from "../msg.js";
import type { Store } from "../store.js";
import type { Toasts } from "../toasts.js";

export class QueuedActions {
  readonly #client: GatewayClient;
  readonly #store: Store;
  readonly #toasts: Toasts;

  constructor(client: GatewayClient, store: Store, toasts: Toasts) {
    this.#client = client;
    this.#store = store;
    this.#toasts = toasts;
  }

  async cancel(msg: Msg): Promise<void> {
    const lane = this.#store.current;
    if (!lane) return;
    await this.#toasts.guard("Cancel", () =>
      this.#client.request("message.delete", {
        chat_id: lane.chat_id,
        thread_id: lane.thread_id,
        message_ids: [msg.message_id],
      }),
    );
  }

  async sendNow(msg: Msg): Promise<void> {
    const lane = this.#store.current;
    if (!lane) return;
    const media = msg.media.map((m) => m.media_id);
    await this.#toasts.guard("Send now", async () => {
      await this.#client.request("message.delete", {
        chat_id: lane.chat_id,
        thread_id: lane.thread_id,
        message_ids: [msg.message_id],
      });
      await this.#client.sendMessage(
        {
          chat_id: lane.chat_id,
          thread_id: lane.thread_id,
          text: msg.text,
          ...(media.length ? { media_refs: media } : {}),
        },
        { whenBusy: "interrupt" },
      );
    });
  }
}
