// Channel changes the user asks for: create a channel or thread, rename, favorite, archive, set
// the default, delete. Each asks the gateway, then puts the answer into the store.
import type { Channel } from "chat-gateway";
import type { GatewayClient } from "chat-gateway/client";
import { confirmDialog, promptDialog } from "./dialog.js";
import type { Store } from "./store.js";
import type { Toasts } from "./toasts.js";
import type { ChannelMenuActions } from "./views/header.js";

type OpenLane = (chatId: string, threadId: string | null) => Promise<void>;

export class ChannelActions implements ChannelMenuActions {
  readonly #client: GatewayClient;
  readonly #store: Store;
  readonly #toasts: Toasts;
  readonly #openLane: OpenLane;

  constructor(client: GatewayClient, store: Store, toasts: Toasts, openLane: OpenLane) {
    this.#client = client;
    this.#store = store;
    this.#toasts = toasts;
    this.#openLane = openLane;
  }

  /** Asks for a name, creates the channel and opens it; resolves whether it did. */
  async createChannel(): Promise<boolean> {
    const name = await promptDialog("New channel", "Name", "", "Create");
    if (!name) return false;
    const ch = await this.#toasts.guard("Creating the channel", () =>
      this.#client.request("channel.create", { name, kind: "channel" }),
    );
    if (!ch) return false;
    this.#store.upsertChannel(ch);
    await this.#openLane(ch.chat_id, null);
    return true;
  }

  async createThread(parent: Channel): Promise<void> {
    const name = await promptDialog(`New thread in ${parent.name}`, "Name", "", "Create");
    if (!name) return;
    const th = await this.#toasts.guard("Creating the thread", () =>
      this.#client.request("channel.create", { name, kind: "thread", parent_chat_id: parent.chat_id }),
    );
    if (th) {
      this.#store.upsertChannel(th);
      await this.#openLane(parent.chat_id, th.chat_id);
    }
  }

  async rename(ch: Channel): Promise<void> {
    const name = await promptDialog(`Rename ${ch.name}`, "Name", ch.name, "Rename");
    if (name && name !== ch.name) await this.update(ch, { name });
  }

  async update(ch: Channel, change: { name?: string; archived?: boolean; favorite?: boolean }): Promise<void> {
    const next = await this.#toasts.guard("Updating the channel", () =>
      this.#client.request("channel.update", { chat_id: ch.chat_id, ...change }),
    );
    if (next) this.#store.upsertChannel(next);
  }

  async setDefault(ch: Channel): Promise<void> {
    const next = await this.#toasts.guard("Setting the default", () =>
      this.#client.request("channel.set_default", { chat_id: ch.chat_id }),
    );
    if (next) this.#store.upsertChannel(next);
  }

  async remove(ch: Channel): Promise<void> {
    const ok = await confirmDialog(
      `Delete ${ch.name}?`,
      `Its messages${ch.kind === "thread" ? "" : ", threads"} and media are deleted for good.`,
    );
    if (!ok) return;
    const done = await this.#toasts.guard("Deleting", () =>
      this.#client.request("channel.delete", { chat_id: ch.chat_id }),
    );
    if (done) this.#store.deleteChannel(done.chat_id);
  }
}
