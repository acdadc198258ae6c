// The signed-in app: wires one GatewayClient to the store, the views to the store, and holds the
// actions that span views (open a lane, load older history, reconnect, sign out).
import { isClientError, type ConnectionState, type GatewayClient, type StateInfo } from "chat-gateway/client";
import { authStatus, logout } from "./api.js";
import { ChannelActions } from "./channel-actions.js";
import { clear, h } from "./dom.js";
import { createAppClient } from "./gateway-client.js";
import { readLastLane, rememberLane } from "./last-lane.js";
import { followNetwork } from "./network.js";
import { currentSubscription, laneFromUrl, onOpenLane, unsubscribePush } from "./pwa.js";
import { footerFields } from "./settings.js";
import type { Msg } from "./msg.js";
import { Store, type Lane, type StoreListener } from "./store.js";
import { Toasts } from "./toasts.js";
import { AskCardsView } from "./views/ask-cards.js";
import { AutomationsView } from "./views/automations.js";
import { Composer } from "./views/composer.js";
import { HeaderView } from "./views/header.js";
import { MessagesView } from "./views/messages.js";
import { QueuedActions } from "./views/queued-actions.js";
import { SearchView } from "./views/search.js";
import { settingsDialog } from "./views/settings-dialog.js";
import { SidebarView } from "./views/sidebar.js";
import { ReadMarker } from "./read-marker.js";
import { Statusbar } from "./views/statusbar.js";

export interface AppOptions {
  root: HTMLElement;
  /** The signed-in user, or null when login protection is off. */
  user: string | null;
  /** The session ended (401 from the socket or the API): show the sign-in screen. */
  onUnauthorized(): void;
  /** The user signed out. */
  onSignedOut(): void;
}

export class App implements StoreListener {
  readonly client: GatewayClient;
  readonly #opts: AppOptions;
  readonly #store: Store;
  readonly #toasts = new Toasts();
  readonly #footer = footerFields();
  readonly #statusbar: Statusbar;
  readonly #sidebar: SidebarView;
  readonly #header: HeaderView;
  readonly #messages: MessagesView;
  readonly #composer: Composer;
  readonly #search: SearchView;
  readonly #asks: AskCardsView;
  readonly #queued: QueuedActions;
  readonly #automations: AutomationsView;
  readonly #typing = h("div", { class: "typing", role: "status", "aria-live": "polite" });
  readonly #main = h("main", { class: "conversation", id: "conversation" });
  readonly #reader: ReadMarker;
  #destroyed = false;
  #stopOpenLane: () => void = () => undefined;
  #stopNetwork: () => void = () => undefined;
  /** The last connection state, drawn again when only the network changed. */
  #conn: [ConnectionState, StateInfo] = ["connecting", {}];

  constructor(options: AppOptions) {
    this.#opts = options;
    this.client = createAppClient(options.user);
    this.#store = new Store(this.client, this);
    const store = this.#store;
    this.#queued = new QueuedActions(this.client, store, this.#toasts);
    const openLane = (chatId: string, threadId: string | null) => this.openLane(chatId, threadId);
    const loadOlder = (lane: Lane) => this.#loadOlder(lane);
    const channelActions = new ChannelActions(this.client, store, this.#toasts, openLane);
    this.#statusbar = new Statusbar({
      user: options.user,
      retry: () => this.client.reconnectNow(),
      search: (query) => void this.#search.search(query),
      settings: () => settingsDialog(this.client, this.#footer, () => this.#messages.render(), options.user !== null),
      signOut: () => void this.#signOut(),
    });
    this.#sidebar = new SidebarView(store, { openLane, createChannel: () => channelActions.createChannel() });
    this.#header = new HeaderView(store, channelActions);
    this.#automations = new AutomationsView(store);
    const actions = {
      regenerate: (msg: Msg) => this.#regenerate(msg),
      edit: (msg: Msg) => this.#composer.editText(msg.text),
      cancelQueued: (msg: Msg) => void this.#queued.cancel(msg),
      sendNow: (msg: Msg) => void this.#queued.sendNow(msg),
    };
    const queued = (msg: Msg) => Boolean(store.current && store.queue(store.current).includes(msg.message_id));
    this.#messages = new MessagesView(
      store,
      {
        openTools: new Set(),
        footer: this.#footer,
        actions,
        queued,
        ownDeviceId: () => this.client.deviceId,
        onMediaError: () => void this.#checkSession(),
      },
      loadOlder,
    );
    this.#composer = new Composer({
      client: this.client,
      store,
      toasts: this.#toasts,
      openLane,
      onSent: () => this.#messages.scrollToBottom(),
    });
    this.#asks = new AskCardsView(this.client, store, this.#toasts);
    this.#reader = new ReadMarker(this.client, store, this.#messages.el, (id) => this.#messages.elementOf(id));
    this.#search = new SearchView({
      client: this.client,
      store,
      toasts: this.#toasts,
      openLane,
      loadOlder,
      elementOf: (id) => this.#messages.elementOf(id),
    });
    this.#render();
    this.#wire();
  }

  /** Connect, load channels and commands, open the last lane. */
  async start(): Promise<void> {
    try {
      await this.client.connect();
    } catch (error) {
      if (isClientError(error, "auth")) return; // the unauthorized handler takes over
      this.#toasts.show(`Could not connect: ${(error as Error).message}`);
      return;
    }
    await this.#loadChannels();
    this.client.request("commands.catalog", {}).then(
      (c) => (this.#composer.slash.commands = c.commands),
      () => undefined,
    );
    // A subscription made earlier is sent again: this device's record may have lost it (a gone endpoint).
    void currentSubscription().then(
      (webpush) => webpush && this.client.registerPush({ webpush }),
      () => undefined,
    );
    const channels = this.#store.channels;
    // A notification's lane first, then the lane on screen last time.
    const last = laneFromUrl() ?? readLastLane();
    const lane =
      (last && channels.has(last.thread_id ?? last.chat_id) ? last : undefined) ??
      (() => {
        const def = [...channels.values()].find((c) => c.is_default) ?? channels.get("default");
        return def ? { chat_id: def.chat_id, thread_id: null } : undefined;
      })();
    if (lane) await this.openLane(lane.chat_id, lane.thread_id);
  }

  /** Destroyed: signed out, or replaced by the sign-in screen. */
  get destroyed(): boolean {
    return this.#destroyed;
  }

  destroy(): void {
    this.#destroyed = true;
    this.#stopOpenLane();
    this.#stopNetwork();
    this.#messages.destroy();
    this.#asks.destroy();
    this.client.removeAllListeners();
    this.client.close();
  }

  async openLane(chatId: string, threadId: string | null): Promise<void> {
    const lane = this.#store.select(chatId, threadId);
    rememberLane(lane);
    this.#sidebar.render();
    this.#header.render();
    void this.#automations.render();
    this.#composer.render();
    this.#messages.render();
    this.#asks.render();
    this.#renderTyping();
    if (!lane.loaded) {
      await this.#loadOlder(lane);
      if (this.#store.current === lane) this.#messages.scrollToBottom();
    }
    this.#reader.schedule();
  }

  // ---------- store listener ----------

  channelsChanged(): void {
    this.#sidebar.render();
  }

  channelChanged(chatId: string): void {
    this.#header.channelChanged(chatId);
  }

  channelDeleted(chatId: string): void {
    const cur = this.#store.current;
    if (cur && (cur.chat_id === chatId || cur.thread_id === chatId)) {
      const def = this.#store.defaultChannel();
      if (def) void this.openLane(def.chat_id, null);
    }
  }

  messageChanged(lane: Lane, msg: Msg): void {
    this.#messages.rerender(lane, msg);
    this.#composer.update();
    if (lane === this.#store.current) this.#reader.schedule();
  }

  messageStreamed(lane: Lane, msg: Msg): void {
    this.#messages.queueBody(lane, msg);
  }

  messagesRemoved(_lane: Lane, ids: string[]): void {
    this.#messages.remove(ids);
  }

  typingChanged(): void {
    this.#renderTyping();
    this.#composer.update();
  }

  /** Send again the user message an answer replied to (the last one before it in its lane). */
  #regenerate(answer: Msg): void {
    const lane = this.#store.current;
    const at = lane?.messages.indexOf(answer) ?? -1;
    const asked = lane?.messages
      .slice(0, Math.max(at, 0))
      .findLast((m) => m.role === "user" && m.text.trim() && !m.text.trimStart().startsWith("/"));
    if (!asked) return this.#toasts.show("There is no question before this answer to ask again.");
    void this.#composer.sendText(asked.text);
  }

  liveChanged(): void {
    this.#messages.refreshQueued();
    this.#composer.update();
  }

  asksChanged(): void {
    const before = this.#asks.el.hidden;
    this.#asks.render();
    this.#messages.placeAttached();
    this.#sidebar.render();
    this.#composer.update();
    if (before && !this.#asks.el.hidden) this.#messages.scrollToBottom();
  }

  // ---------- layout and wiring ----------

  #render(): void {
    const root = this.#opts.root;
    clear(root);
    document.title = "chat-gateway";
    this.#main.append(this.#header.el, this.#automations.el, this.#messages.el, this.#typing, this.#composer.el);
    this.#messages.attach(this.#asks.el);
    root.append(
      this.#statusbar.el,
      h("div", { class: "layout" }, this.#sidebar.el, this.#main, this.#search.el),
      this.#toasts.el,
    );
    this.#setConn("connecting", {});
  }

  #wire(): void {
    const c = this.client;
    c.on("state", (state, info) => this.#setConn(state, info));
    c.on("unauthorized", () => this.#opts.onUnauthorized());
    c.on("reset", () => void this.#resetAll());
    c.on("notification", (p) => {
      this.#toasts.show(`${p.title}${p.body ? `: ${p.body}` : ""}`);
      if (p.kind === "cron" && p.chat_id) this.#newPost(p.chat_id);
    });
    c.on("error", (p, frame) => {
      if (frame.id === undefined) this.#toasts.show(`Gateway: ${p.message}`);
    });
    this.#main.addEventListener("click", () => document.body.classList.remove("show-sidebar"));
    this.#stopNetwork = followNetwork(c, () => this.#setConn(...this.#conn));
    this.#stopOpenLane = onOpenLane((lane) => {
      if (this.#store.channels.has(lane.thread_id ?? lane.chat_id)) void this.openLane(lane.chat_id, lane.thread_id);
    });
    this.#wireDrop();
  }

  /** Files dropped on the conversation are attached, unless the composer is hidden. */
  #wireDrop(): void {
    const main = this.#main;
    main.addEventListener("dragover", (event) => {
      if (!event.dataTransfer?.types.includes("Files") || this.#composer.el.hidden) return;
      event.preventDefault();
      main.classList.add("dragging");
    });
    main.addEventListener("dragleave", (event) => {
      if (event.target === main || !main.contains(event.relatedTarget as Node)) main.classList.remove("dragging");
    });
    main.addEventListener("drop", (event) => {
      main.classList.remove("dragging");
      if (!event.dataTransfer?.files.length || this.#composer.el.hidden) return;
      event.preventDefault();
      for (const file of event.dataTransfer.files) void this.#composer.upload(file);
    });
  }

  /** A webhook post or scheduled answer: a badge on its channel, or its last result shown anew. */
  #newPost(chatId: string): void {
    if (this.#store.current?.chat_id === chatId) void this.#automations.render();
    this.#store.notePost(chatId);
    this.#sidebar.render();
  }

  #setConn(state: ConnectionState, info: StateInfo): void {
    this.#conn = [state, info];
    this.#statusbar.setConnection(state, info, navigator.onLine);
    this.#composer.update();
    // Typing and streaming state is live-only: it comes back with the next frames or the sync.
    if (state === "reconnecting") this.#store.clearTyping();
  }

  #renderTyping(): void {
    const on = Boolean(this.#store.current?.typing);
    clear(this.#typing);
    if (on)
      this.#typing.append(
        h("span", { class: "dots", "aria-hidden": "true" }, h("i"), h("i"), h("i")),
        " Agent is typing…",
      );
    this.#typing.classList.toggle("on", on);
  }

  // ---------- loading ----------

  async #resetAll(): Promise<void> {
    const current = this.#store.forgetLanes();
    await this.#loadChannels();
    if (current) await this.openLane(current.chat_id, current.thread_id);
  }

  async #loadChannels(): Promise<void> {
    try {
      const list = await this.client.request("channel.list", {});
      this.#store.setChannels(list.channels);
      this.#reader.schedule();
    } catch (error) {
      this.#toasts.show(`Could not load channels: ${(error as Error).message}`);
    }
  }

  /** Load the next older page of a lane (the first page when it was never loaded). */
  #loadOlder(lane: Lane): Promise<void> {
    if (lane.loading) return lane.loading;
    if (lane.loaded && !lane.pager.hasMore) return Promise.resolve();
    lane.loading = (async () => {
      try {
        this.#store.prependPage(lane, await lane.pager.next());
        if (this.#store.current === lane) this.#messages.renderKeepingBottom();
      } catch (error) {
        if (!isClientError(error, "auth") && !isClientError(error, "closed"))
          this.#toasts.show(`Could not load history: ${(error as Error).message}`);
      } finally {
        lane.loading = undefined;
      }
    })();
    return lane.loading;
  }

  // ---------- session ----------

  async #checkSession(): Promise<void> {
    const status = await authStatus().catch(() => undefined);
    if (status?.enabled && status.user === null && !this.#destroyed) this.#opts.onUnauthorized();
  }

  async #signOut(): Promise<void> {
    // A signed-out browser must not go on showing this user's notifications.
    if (await currentSubscription().catch(() => undefined)) {
      await this.client.registerPush({ webpush: null }, { timeoutMs: 2_000 }).catch(() => undefined);
      await unsubscribePush().catch(() => undefined);
    }
    // Closed first: the logout ends the session, and the socket's 4401 (or the logout's own 401
    // when the session had already gone) must not draw a "session ended" form before ours.
    this.destroy();
    await logout().catch(() => undefined);
    this.#opts.onSignedOut();
  }
}
