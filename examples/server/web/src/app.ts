// The signed-in app: status bar, channel list, conversation, composer, search and settings, all
// fed by one GatewayClient.
import type { Channel, CommandEntry, HistoryItem, MediaRef, MessageStatus, RuntimeInfo, SearchHit } from "chat-gateway";
import { createGatewayClient, isClientError, localStorageCursorStore, type ConnectionState, type GatewayClient, type HistoryPager, type StateInfo } from "chat-gateway/client";
import { authStatus, logout } from "./api.js";
import { avatar } from "./avatar.js";
import { confirmDialog, infoDialog, promptDialog } from "./dialog.js";
import { clear, formatBytes, formatTime, h, icon } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { FOOTER_FIELDS, footerFields, footerParts, setFooterFields, setStreamingSetting, streamingSetting, type FooterField } from "./settings.js";

interface ToolRow {
  index: number;
  name: string;
  preview: string;
  args: Record<string, unknown>;
  output?: unknown;
  duration?: number;
  ok?: boolean;
}

interface Msg {
  message_id: string;
  role: "user" | "assistant";
  text: string;
  reasoning: string;
  ts: number;
  media: MediaRef[];
  runtime?: RuntimeInfo;
  status?: MessageStatus;
  streaming: boolean;
  tools: ToolRow[];
  commentary: string[];
}

interface Lane {
  key: string;
  chat_id: string;
  thread_id: string | null;
  messages: Msg[];
  byId: Map<string, Msg>;
  pager: HistoryPager;
  loading: Promise<void> | undefined;
  loaded: boolean;
  typing: boolean;
  unread: number;
}

interface Attachment {
  id: number;
  name: string;
  ref?: MediaRef;
  failed?: string;
  el: HTMLElement;
  progress: HTMLProgressElement;
}

const LAST_LANE_KEY = "chat-gateway:last-lane";
const laneKey = (chatId: string, threadId: string | null) => `${chatId}|${threadId ?? ""}`;

function fromHistory(item: HistoryItem): Msg {
  return {
    message_id: item.message_id,
    role: item.role,
    text: item.text,
    reasoning: item.reasoning ?? "",
    ts: item.ts,
    media: item.media ?? [],
    runtime: item.runtime,
    status: item.status,
    streaming: item.status === "streaming",
    tools: [],
    commentary: [],
  };
}

function compareChannels(a: Channel, b: Channel): number {
  const fav = Number(Boolean(b.favorite)) - Number(Boolean(a.favorite));
  if (fav !== 0) return fav;
  const an = a.name.toLocaleLowerCase();
  const bn = b.name.toLocaleLowerCase();
  if (an !== bn) return an < bn ? -1 : 1;
  return a.chat_id < b.chat_id ? -1 : a.chat_id > b.chat_id ? 1 : 0;
}

function stringify(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

export interface AppOptions {
  root: HTMLElement;
  /** The signed-in user, or null when login protection is off. */
  user: string | null;
  /** The session ended (401 from the socket or the API): show the sign-in screen. */
  onUnauthorized(): void;
  /** The user signed out. */
  onSignedOut(): void;
}

export class App {
  readonly client: GatewayClient;
  readonly #opts: AppOptions;
  readonly #channels = new Map<string, Channel>();
  readonly #lanes = new Map<string, Lane>();
  #current: Lane | undefined;
  #commands: CommandEntry[] = [];
  #footer = footerFields();
  #attachments: Attachment[] = [];
  #nextAttachment = 0;
  #slashActive = 0;
  #slashMatches: CommandEntry[] = [];
  readonly #msgEls = new Map<string, HTMLElement>();
  readonly #openTools = new Set<string>();
  #renderQueued = new Set<string>();
  #destroyed = false;

  // Elements.
  readonly #conn = h("span", { class: "conn", role: "status", "aria-live": "polite" });
  readonly #retry = h("button", { type: "button", class: "link", hidden: true }, "Retry now");
  readonly #sidebar = h("nav", { class: "sidebar", "aria-label": "Channels" });
  readonly #header = h("div", { class: "conv-header" });
  readonly #messages = h("div", { class: "messages", role: "log", "aria-label": "Messages", tabindex: 0 });
  readonly #typing = h("div", { class: "typing", role: "status", "aria-live": "polite" });
  readonly #composerArea = h("div", { class: "composer-area" });
  readonly #textarea = h("textarea", {
    class: "composer-input",
    rows: 2,
    placeholder: "Message… (/ for commands)",
    title: "Enter sends, Shift+Enter starts a new line, / lists commands",
    "aria-label": "Message",
    "aria-autocomplete": "list",
    "aria-controls": "slash-list",
  });
  readonly #slashList = h("ul", { id: "slash-list", class: "slash-list", role: "listbox", "aria-label": "Commands", hidden: true });
  readonly #autoThread = h("input", { type: "checkbox", id: "auto-thread" });
  readonly #autoThreadLabel = h("label", { class: "toggle", for: "auto-thread", title: "Start a new thread for this message" }, this.#autoThread, " Auto-thread");
  readonly #fileInput = h("input", { type: "file", id: "file-input", class: "visually-hidden", multiple: true });
  readonly #chips = h("div", { class: "chips", role: "group", "aria-label": "Attachments" });
  readonly #sendButton = h("button", { type: "submit", class: "send" }, "Send");
  readonly #searchResults = h("aside", { class: "search-results", "aria-label": "Search results", hidden: true });
  readonly #toasts = h("div", { class: "toasts", role: "status", "aria-live": "polite" });
  readonly #main = h("main", { class: "conversation", id: "conversation" });

  constructor(options: AppOptions) {
    this.#opts = options;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    this.client = createGatewayClient({
      url: `${scheme}//${location.host}/ws/gateway`,
      deviceName: `Web (${navigator.platform || "browser"})`,
      streaming: streamingSetting(),
      // One cursor per signed-in user: another account in the same browser has its own outbox.
      cursorStore: localStorageCursorStore(`chat-gateway:cursor:${location.host}:${options.user ?? "~anonymous"}`),
      checkAuth: async () => {
        const status = await authStatus();
        return !status.enabled || status.user !== null;
      },
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
      this.#toast(`Could not connect: ${(error as Error).message}`);
      return;
    }
    await this.#loadChannels();
    this.client.request("commands.catalog", {}).then((c) => (this.#commands = c.commands), () => undefined);
    const last = this.#readLastLane();
    const lane =
      (last && this.#channels.has(last.thread_id ?? last.chat_id) ? last : undefined) ??
      (() => {
        const def = [...this.#channels.values()].find((c) => c.is_default) ?? this.#channels.get("default");
        return def ? { chat_id: def.chat_id, thread_id: null } : undefined;
      })();
    if (lane) await this.openLane(lane.chat_id, lane.thread_id);
  }

  destroy(): void {
    this.#destroyed = true;
    this.client.removeAllListeners();
    this.client.close();
  }

  // ---------- layout ----------

  #render(): void {
    const root = this.#opts.root;
    clear(root);
    document.title = "chat-gateway";
    const search = h("input", { type: "search", name: "q", placeholder: "Search", "aria-label": "Search messages", autocomplete: "off" });
    const searchForm = h("form", { class: "search", role: "search" }, search);
    searchForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.#search(search.value);
    });
    const userBox = this.#opts.user
      ? h(
          "div",
          { class: "account" },
          h("span", { class: "user-name", title: "Signed in" }, h("span", { class: "visually-hidden" }, "Signed in as "), this.#opts.user),
          h("button", { type: "button", class: "secondary small", onclick: () => void this.#signOut() }, "Sign out"),
        )
      : null;
    const statusbar = h(
      "header",
      { class: "statusbar" },
      h("button", { type: "button", class: "icon menu-toggle", "aria-label": "Show channels", onclick: () => document.body.classList.toggle("show-sidebar") }, icon("menu")),
      h("span", { class: "brand" }, h("img", { src: "/icon.svg", alt: "", width: 20, height: 20 }), " chat-gateway"),
      h("span", { class: "conn-box" }, this.#conn, this.#retry),
      searchForm,
      h("button", { type: "button", class: "icon", "aria-label": "Settings", title: "Settings", onclick: () => this.#settings() }, icon("gear")),
      userBox,
    );
    const form = h(
      "form",
      { class: "composer", "aria-label": "Send a message" },
      this.#chips,
      h(
        "div",
        { class: "composer-row" },
        h("label", { class: "icon attach", for: "file-input", title: "Attach files", role: "button", tabindex: 0, "aria-label": "Attach files" }, icon("clip")),
        this.#fileInput,
        h("div", { class: "composer-input-wrap" }, this.#slashList, this.#textarea),
        this.#sendButton,
      ),
      h("div", { class: "composer-options" }, this.#autoThreadLabel),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.#send();
    });
    this.#composerArea.append(form);
    this.#main.append(this.#header, this.#messages, this.#typing, this.#composerArea);
    root.append(statusbar, h("div", { class: "layout" }, this.#sidebar, this.#main, this.#searchResults), this.#toasts);
    this.#setConn("connecting", {});
  }

  #wire(): void {
    const c = this.client;
    c.on("state", (state, info) => this.#setConn(state, info));
    c.on("unauthorized", () => this.#opts.onUnauthorized());
    c.on("reset", () => void this.#resetAll());
    c.on("channel.created", (ch) => this.#upsertChannel(ch));
    c.on("channel.renamed", (ch) => this.#upsertChannel(ch));
    c.on("channel.deleted", (p) => this.#deleteChannel(p.chat_id));
    c.on("message", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return this.#markUnread(p.chat_id, p.thread_id, p.role);
      const msg = lane.byId.get(p.message_id) ?? this.#add(lane, fromHistory(p));
      Object.assign(msg, fromHistory(p), { tools: msg.tools, commentary: msg.commentary });
      this.#rerender(lane, msg);
      if (p.role === "assistant" && lane !== this.#current) this.#markUnread(p.chat_id, p.thread_id, p.role);
    });
    c.on("message.start", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = this.#ensureStreaming(lane, p.message_id);
      this.#rerender(lane, msg);
    });
    c.on("message.update", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = this.#ensureStreaming(lane, p.message_id);
      msg.text = p.text;
      if (p.reasoning !== undefined) msg.reasoning = p.reasoning;
      this.#queueBody(lane, msg);
    });
    c.on("message.stop", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return this.#markUnread(p.chat_id, p.thread_id, "assistant");
      const msg = lane.byId.get(p.message_id) ?? this.#add(lane, { ...this.#blank(p.message_id), ts: p.ts });
      Object.assign(msg, { text: p.final_text, reasoning: p.reasoning ?? "", runtime: p.runtime, status: p.status, media: p.media ?? msg.media, ts: p.ts, streaming: false });
      this.#rerender(lane, msg);
      if (lane !== this.#current) this.#markUnread(p.chat_id, p.thread_id, "assistant");
    });
    c.on("message.deleted", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      for (const id of p.message_ids) {
        lane.byId.delete(id);
        this.#msgEls.get(id)?.remove();
        this.#msgEls.delete(id);
      }
      lane.messages = lane.messages.filter((m) => lane.byId.has(m.message_id));
    });
    c.on("commentary", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = this.#ensureStreaming(lane, p.message_id);
      msg.commentary.push(p.text);
      this.#rerender(lane, msg);
    });
    c.on("tool.start", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = this.#ensureStreaming(lane, p.message_id);
      msg.tools.push({ index: p.index, name: p.name, preview: p.preview, args: p.args });
      this.#rerender(lane, msg);
    });
    c.on("tool.end", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = this.#ensureStreaming(lane, p.message_id);
      let row = msg.tools.find((t) => t.index === p.index);
      if (!row) msg.tools.push((row = { index: p.index, name: p.name, preview: "", args: {} }));
      Object.assign(row, { output: p.output, duration: p.duration, ok: p.ok });
      this.#rerender(lane, msg);
    });
    c.on("typing", (p) => {
      const lane = this.#lane(p.chat_id, p.thread_id);
      lane.typing = p.on;
      if (lane === this.#current) this.#renderTyping();
    });
    c.on("media.offer", (p) => {
      if (!p.message_id || !p.chat_id) return;
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id ?? null);
      const msg = lane?.byId.get(p.message_id);
      if (!lane || !msg || msg.media.some((m) => m.media_id === p.media_id)) return;
      msg.media.push({ media_id: p.media_id, kind: p.kind, mime: p.mime, size: p.size, filename: p.filename });
      this.#rerender(lane, msg);
    });
    c.on("notification", (p) => this.#toast(`${p.title}${p.body ? `: ${p.body}` : ""}`));
    c.on("error", (p, frame) => {
      if (frame.id === undefined) this.#toast(`Gateway: ${p.message}`);
    });

    this.#retry.addEventListener("click", () => this.client.reconnectNow());
    this.#main.addEventListener("click", () => document.body.classList.remove("show-sidebar"));
    window.addEventListener("online", () => this.client.reconnectNow());

    this.#messages.addEventListener("scroll", () => {
      if (this.#messages.scrollTop < 120 && this.#current) void this.#loadOlder(this.#current);
    });
    this.#textarea.addEventListener("keydown", (event) => this.#composerKey(event));
    this.#textarea.addEventListener("input", () => this.#updateSlash());
    this.#fileInput.addEventListener("change", () => {
      for (const file of this.#fileInput.files ?? []) void this.#upload(file);
      this.#fileInput.value = "";
    });
    const attach = this.#composerArea.querySelector<HTMLElement>(".attach");
    attach?.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        this.#fileInput.click();
      }
    });
    this.#main.addEventListener("dragover", (event) => {
      if (!event.dataTransfer?.types.includes("Files") || this.#composerArea.hidden) return;
      event.preventDefault();
      this.#main.classList.add("dragging");
    });
    this.#main.addEventListener("dragleave", (event) => {
      if (event.target === this.#main || !this.#main.contains(event.relatedTarget as Node)) this.#main.classList.remove("dragging");
    });
    this.#main.addEventListener("drop", (event) => {
      this.#main.classList.remove("dragging");
      if (!event.dataTransfer?.files.length || this.#composerArea.hidden) return;
      event.preventDefault();
      for (const file of event.dataTransfer.files) void this.#upload(file);
    });
  }

  // ---------- connection ----------

  #setConn(state: ConnectionState, info: StateInfo): void {
    const labels: Record<ConnectionState, string> = {
      connecting: "Connecting…",
      syncing: "Catching up…",
      open: "Connected",
      reconnecting: `Reconnecting${info.retryInMs !== undefined ? ` in ${Math.max(1, Math.round(info.retryInMs / 1000))} s` : ""}…`,
      unauthorized: "Signed out",
      closed: "Offline",
    };
    this.#conn.textContent = labels[state];
    this.#conn.dataset.state = state;
    this.#retry.hidden = state !== "reconnecting";
    if (state === "reconnecting") {
      // Typing and streaming state is live-only: it comes back with the next frames or the sync.
      for (const lane of this.#lanes.values()) lane.typing = false;
      this.#renderTyping();
    }
  }

  async #resetAll(): Promise<void> {
    const current = this.#current;
    this.#lanes.clear();
    this.#current = undefined;
    await this.#loadChannels();
    if (current) await this.openLane(current.chat_id, current.thread_id);
  }

  // ---------- channels ----------

  async #loadChannels(): Promise<void> {
    try {
      const list = await this.client.request("channel.list", {});
      this.#channels.clear();
      for (const ch of list.channels) this.#channels.set(ch.chat_id, ch);
      this.#renderSidebar();
    } catch (error) {
      this.#toast(`Could not load channels: ${(error as Error).message}`);
    }
  }

  #upsertChannel(ch: Channel): void {
    this.#channels.set(ch.chat_id, { ...this.#channels.get(ch.chat_id), ...ch });
    if (ch.is_default) {
      for (const other of this.#channels.values()) if (other.chat_id !== ch.chat_id && other.is_default) other.is_default = false;
    }
    this.#renderSidebar();
    if (this.#current && (this.#current.thread_id ?? this.#current.chat_id) === ch.chat_id) this.#renderHeader();
  }

  #deleteChannel(chatId: string): void {
    this.#channels.delete(chatId);
    for (const [key, lane] of this.#lanes) if (lane.chat_id === chatId || lane.thread_id === chatId) this.#lanes.delete(key);
    this.#renderSidebar();
    const cur = this.#current;
    if (cur && (cur.chat_id === chatId || cur.thread_id === chatId)) {
      const def = [...this.#channels.values()].find((c) => c.is_default);
      if (def) void this.openLane(def.chat_id, null);
    }
  }

  #channelOf(lane: { chat_id: string; thread_id: string | null }): Channel | undefined {
    return this.#channels.get(lane.thread_id ?? lane.chat_id);
  }

  #renderSidebar(): void {
    const all = [...this.#channels.values()].sort(compareChannels);
    const top = all.filter((c) => c.kind !== "thread");
    const threadsOf = (id: string) => all.filter((c) => c.kind === "thread" && c.parent_chat_id === id);
    const current = this.#current ? (this.#current.thread_id ?? this.#current.chat_id) : undefined;
    const entry = (c: Channel): HTMLElement => {
      const lane = c.kind === "thread" ? { chat_id: c.parent_chat_id!, thread_id: c.chat_id } : { chat_id: c.chat_id, thread_id: null };
      const unread = this.#lanes.get(laneKey(lane.chat_id, lane.thread_id))?.unread ?? 0;
      return h(
        "button",
        {
          type: "button",
          class: `channel ${c.kind === "thread" ? "thread" : ""}`,
          "aria-current": c.chat_id === current ? "page" : undefined,
          dataset: { chatId: c.chat_id },
          onclick: () => {
            document.body.classList.remove("show-sidebar");
            void this.openLane(lane.chat_id, lane.thread_id);
          },
        },
        c.kind === "thread" ? h("span", { class: "thread-mark", "aria-hidden": "true" }, "↳") : avatar(c),
        h("span", { class: "channel-name" }, c.name),
        c.favorite ? h("span", { class: "fav", title: "Favorite" }, h("span", { "aria-hidden": "true" }, "★"), h("span", { class: "visually-hidden" }, "(favorite)")) : null,
        c.automation ? h("span", { class: "tag", title: "Automation channel" }, "auto") : null,
        c.is_default ? h("span", { class: "tag", title: "Default channel" }, "default") : null,
        unread > 0 ? h("span", { class: "badge" }, String(unread), h("span", { class: "visually-hidden" }, " unread")) : null,
      );
    };
    const tree = (list: Channel[], archived: boolean) =>
      h(
        "ul",
        { class: "channel-list" },
        list.map((c) => {
          const threads = threadsOf(c.chat_id).filter((t) => t.archived === archived || (archived && c.archived));
          return h("li", null, entry(c), threads.length ? h("ul", { class: "threads" }, threads.map((t) => h("li", null, entry(t)))) : null);
        }),
      );
    const active = top.filter((c) => !c.archived);
    const archived = top.filter((c) => c.archived);
    // An archived thread of an active channel is listed under "Archived" too, with its parent's name.
    const archivedThreads = all.filter((c) => c.kind === "thread" && c.archived && !this.#channels.get(c.parent_chat_id ?? "")?.archived);
    clear(this.#sidebar);
    this.#sidebar.append(
      h("div", { class: "sidebar-head" }, h("h2", null, "Channels"), h("button", { type: "button", class: "small", onclick: () => void this.#createChannel() }, "+ New")),
      tree(active, false),
      archived.length + archivedThreads.length
        ? h(
            "details",
            { class: "archived" },
            h("summary", null, `Archived (${archived.length + archivedThreads.length})`),
            tree(archived, true),
            archivedThreads.length ? h("ul", { class: "channel-list" }, archivedThreads.map((t) => h("li", null, entry(t)))) : null,
          )
        : "",
    );
  }

  #renderHeader(): void {
    clear(this.#header);
    const lane = this.#current;
    const ch = lane && this.#channelOf(lane);
    if (!lane || !ch) return;
    const parent = ch.kind === "thread" ? this.#channels.get(ch.parent_chat_id ?? "") : undefined;
    document.title = `${ch.name} · chat-gateway`;
    const menuItems: HTMLElement[] = [];
    const item = (label: string, run: () => void, cls = "") =>
      h(
        "button",
        {
          type: "button",
          role: "menuitem",
          class: cls,
          onclick: (event: Event) => {
            (event.currentTarget as HTMLElement).closest("details")?.removeAttribute("open");
            run();
          },
        },
        label,
      );
    menuItems.push(item(ch.favorite ? "Remove from favorites" : "Add to favorites", () => void this.#update(ch, { favorite: !ch.favorite })));
    if (ch.kind !== "thread" && !ch.automation) menuItems.push(item("New thread", () => void this.#createThread(ch)));
    menuItems.push(item("Rename…", () => void this.#rename(ch)));
    if (!ch.is_default) menuItems.push(item(ch.archived ? "Unarchive" : "Archive", () => void this.#update(ch, { archived: !ch.archived })));
    if (ch.kind !== "thread" && !ch.is_default && !ch.automation) menuItems.push(item("Set as default", () => void this.#setDefault(ch)));
    if (ch.kind !== "default" && !ch.is_default) menuItems.push(item("Delete…", () => void this.#delete(ch), "danger"));
    this.#header.append(
      avatar(parent ?? ch, "large"),
      h(
        "div",
        { class: "conv-title" },
        h("h1", null, parent ? h("span", { class: "parent-name" }, `${parent.name} › `) : null, ch.name),
        h(
          "div",
          { class: "conv-tags" },
          ch.is_default ? h("span", { class: "tag" }, "default") : null,
          ch.automation ? h("span", { class: "tag" }, "automation · read-only") : null,
          ch.archived ? h("span", { class: "tag" }, "archived") : null,
          ch.favorite ? h("span", { class: "tag" }, "★ favorite") : null,
        ),
      ),
      h("details", { class: "menu" }, h("summary", { "aria-label": "Channel actions", title: "Channel actions" }, icon("more")), h("div", { class: "menu-items", role: "menu" }, menuItems)),
    );
  }

  async #guard<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      this.#toast(`${what} failed: ${(error as Error).message}`);
      return undefined;
    }
  }

  async #createChannel(): Promise<void> {
    const name = await promptDialog("New channel", "Name", "", "Create");
    if (!name) return;
    const ch = await this.#guard("Creating the channel", () => this.client.request("channel.create", { name, kind: "channel" }));
    if (ch) {
      this.#upsertChannel(ch);
      await this.openLane(ch.chat_id, null);
    }
  }

  async #createThread(parent: Channel): Promise<void> {
    const name = await promptDialog(`New thread in ${parent.name}`, "Name", "", "Create");
    if (!name) return;
    const th = await this.#guard("Creating the thread", () => this.client.request("channel.create", { name, kind: "thread", parent_chat_id: parent.chat_id }));
    if (th) {
      this.#upsertChannel(th);
      await this.openLane(parent.chat_id, th.chat_id);
    }
  }

  async #rename(ch: Channel): Promise<void> {
    const name = await promptDialog(`Rename ${ch.name}`, "Name", ch.name, "Rename");
    if (name && name !== ch.name) await this.#update(ch, { name });
  }

  async #update(ch: Channel, change: { name?: string; archived?: boolean; favorite?: boolean }): Promise<void> {
    const next = await this.#guard("Updating the channel", () => this.client.request("channel.update", { chat_id: ch.chat_id, ...change }));
    if (next) this.#upsertChannel(next);
  }

  async #setDefault(ch: Channel): Promise<void> {
    const next = await this.#guard("Setting the default", () => this.client.request("channel.set_default", { chat_id: ch.chat_id }));
    if (next) this.#upsertChannel(next);
  }

  async #delete(ch: Channel): Promise<void> {
    const ok = await confirmDialog(`Delete ${ch.name}?`, `Its messages${ch.kind === "thread" ? "" : ", threads"} and media are deleted for good.`);
    if (!ok) return;
    const done = await this.#guard("Deleting", () => this.client.request("channel.delete", { chat_id: ch.chat_id }));
    if (done) this.#deleteChannel(done.chat_id);
  }

  // ---------- lanes and messages ----------

  #lane(chatId: string, threadId: string | null): Lane {
    const key = laneKey(chatId, threadId);
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = {
        key,
        chat_id: chatId,
        thread_id: threadId,
        messages: [],
        byId: new Map(),
        pager: this.client.historyPager({ chat_id: chatId, thread_id: threadId }, { limit: 50 }),
        loading: undefined,
        loaded: false,
        typing: false,
        unread: 0,
      };
      this.#lanes.set(key, lane);
    }
    return lane;
  }

  #laneIfLoaded(chatId: string, threadId: string | null): Lane | undefined {
    const lane = this.#lanes.get(laneKey(chatId, threadId));
    return lane?.loaded ? lane : undefined;
  }

  #markUnread(chatId: string, threadId: string | null, role: string): void {
    if (role !== "assistant") return;
    const lane = this.#lane(chatId, threadId);
    if (lane === this.#current) return;
    lane.unread++;
    this.#renderSidebar();
  }

  #blank(id: string): Msg {
    return { message_id: id, role: "assistant", text: "", reasoning: "", ts: Date.now(), media: [], streaming: true, tools: [], commentary: [] };
  }

  #add(lane: Lane, msg: Msg): Msg {
    lane.messages.push(msg);
    lane.byId.set(msg.message_id, msg);
    return msg;
  }

  #ensureStreaming(lane: Lane, id: string): Msg {
    return lane.byId.get(id) ?? this.#add(lane, this.#blank(id));
  }

  async openLane(chatId: string, threadId: string | null): Promise<void> {
    const lane = this.#lane(chatId, threadId);
    this.#current = lane;
    lane.unread = 0;
    try {
      localStorage.setItem(LAST_LANE_KEY, JSON.stringify({ chat_id: chatId, thread_id: threadId }));
    } catch {
      // Not remembered: fine.
    }
    this.#renderSidebar();
    this.#renderHeader();
    this.#renderComposer();
    this.#renderMessages();
    this.#renderTyping();
    if (!lane.loaded) {
      await this.#loadOlder(lane);
      if (this.#current === lane) this.#messages.scrollTop = this.#messages.scrollHeight;
    }
  }

  #readLastLane(): { chat_id: string; thread_id: string | null } | undefined {
    try {
      const raw = localStorage.getItem(LAST_LANE_KEY);
      const value = raw ? (JSON.parse(raw) as { chat_id?: unknown; thread_id?: unknown }) : undefined;
      if (value && typeof value.chat_id === "string") return { chat_id: value.chat_id, thread_id: typeof value.thread_id === "string" ? value.thread_id : null };
    } catch {
      // Ignore a broken entry.
    }
    return undefined;
  }

  /** Load the next older page of a lane (the first page when it was never loaded). */
  #loadOlder(lane: Lane): Promise<void> {
    if (lane.loading) return lane.loading;
    if (lane.loaded && !lane.pager.hasMore) return Promise.resolve();
    lane.loading = (async () => {
      try {
        const page = await lane.pager.next();
        const older = page.filter((m) => !lane.byId.has(m.message_id)).map(fromHistory);
        for (const m of older) lane.byId.set(m.message_id, m);
        lane.messages = [...older, ...lane.messages];
        lane.loaded = true;
        if (this.#current === lane) {
          const box = this.#messages;
          const fromBottom = box.scrollHeight - box.scrollTop;
          this.#renderMessages();
          box.scrollTop = box.scrollHeight - fromBottom;
        }
      } catch (error) {
        if (!isClientError(error, "auth") && !isClientError(error, "closed")) this.#toast(`Could not load history: ${(error as Error).message}`);
      } finally {
        lane.loading = undefined;
      }
    })();
    return lane.loading;
  }

  #renderMessages(): void {
    const lane = this.#current;
    clear(this.#messages);
    this.#msgEls.clear();
    if (!lane) return;
    if (lane.loaded && lane.pager.hasMore) {
      this.#messages.append(h("div", { class: "history-more" }, h("button", { type: "button", class: "link", onclick: () => void this.#loadOlder(lane) }, "Load older messages")));
    } else if (lane.loaded && lane.messages.length === 0) {
      this.#messages.append(h("p", { class: "empty" }, "No messages yet. Say hello!"));
    } else if (lane.loaded) {
      this.#messages.append(h("p", { class: "history-start" }, "Start of the conversation"));
    }
    for (const msg of lane.messages) {
      const el = this.#messageEl(msg);
      this.#msgEls.set(msg.message_id, el);
      this.#messages.append(el);
    }
  }

  #nearBottom(): boolean {
    const box = this.#messages;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  }

  /** Re-render one message of a lane (or append it) when that lane is on screen. */
  #rerender(lane: Lane, msg: Msg): void {
    if (lane !== this.#current) return;
    const stick = this.#nearBottom();
    const el = this.#messageEl(msg);
    const old = this.#msgEls.get(msg.message_id);
    if (old) old.replaceWith(el);
    else {
      this.#messages.querySelector(".empty")?.remove();
      this.#messages.append(el);
    }
    this.#msgEls.set(msg.message_id, el);
    if (stick) this.#messages.scrollTop = this.#messages.scrollHeight;
  }

  /** A streamed update: re-render the text once per frame at most. */
  #queueBody(lane: Lane, msg: Msg): void {
    if (lane !== this.#current || this.#renderQueued.has(msg.message_id)) return;
    this.#renderQueued.add(msg.message_id);
    requestAnimationFrame(() => {
      this.#renderQueued.delete(msg.message_id);
      if (this.#destroyed || lane !== this.#current) return;
      const el = this.#msgEls.get(msg.message_id);
      if (!el) return this.#rerender(lane, msg);
      const stick = this.#nearBottom();
      const body = el.querySelector<HTMLElement>(".body");
      if (!body) return this.#rerender(lane, msg);
      renderMarkdown(body, msg.text);
      if (msg.reasoning) {
        const reasoning = el.querySelector<HTMLElement>(".reasoning-text");
        if (reasoning) reasoning.textContent = msg.reasoning;
        else return this.#rerender(lane, msg);
      }
      if (stick) this.#messages.scrollTop = this.#messages.scrollHeight;
    });
  }

  #messageEl(msg: Msg): HTMLElement {
    const assistant = msg.role === "assistant";
    const status = msg.status && msg.status !== "complete" && msg.status !== "streaming" ? msg.status : undefined;
    const body = h("div", { class: "body md" });
    renderMarkdown(body, msg.text);
    const tools = msg.tools.map((t) => {
      const key = `${msg.message_id}:${t.index}`;
      const done = t.ok !== undefined;
      const details = h(
        "details",
        { class: `tool ${done ? (t.ok ? "ok" : "failed") : "running"}`, open: this.#openTools.has(key), dataset: { tool: t.name } },
        h(
          "summary",
          null,
          h("span", { class: "tool-state", "aria-hidden": "true" }, done ? (t.ok ? "✓" : "✗") : "…"),
          h("span", { class: "visually-hidden" }, done ? (t.ok ? "Tool succeeded: " : "Tool failed: ") : "Tool running: "),
          h("code", { class: "tool-name" }, t.name),
          h("span", { class: "tool-preview" }, t.preview),
          done && t.duration !== undefined ? h("span", { class: "tool-duration" }, `${t.duration < 1 ? `${Math.round(t.duration * 1000)} ms` : `${t.duration.toFixed(1)} s`}`) : null,
        ),
        h("div", { class: "tool-label" }, "Arguments"),
        h("pre", { class: "tool-args" }, stringify(t.args)),
        done ? h("div", { class: "tool-label" }, t.ok ? "Output" : "Error") : null,
        done ? h("pre", { class: "tool-output" }, stringify(t.output)) : null,
      );
      details.addEventListener("toggle", () => (details.open ? this.#openTools.add(key) : this.#openTools.delete(key)));
      return details;
    });
    const media = msg.media.map((m) =>
      m.kind === "image"
        ? h(
            "a",
            { class: "media-image", href: `/api/media/${encodeURIComponent(m.media_id)}`, target: "_blank", rel: "noopener noreferrer" },
            // A broken image may be a 401: the session ended.
            h("img", { src: `/api/media/${encodeURIComponent(m.media_id)}`, alt: m.filename, loading: "lazy", onerror: () => void this.#checkSession() }),
          )
        : h("a", { class: "media-file", href: `/api/media/${encodeURIComponent(m.media_id)}`, download: m.filename }, icon("file"), `${m.filename} (${formatBytes(m.size)})`),
    );
    const parts = assistant && !msg.streaming ? footerParts(msg.runtime, this.#footer) : [];
    return h(
      "article",
      { class: `msg ${msg.role}${msg.streaming ? " streaming" : ""}${status ? ` status-${status}` : ""}`, id: `msg-${msg.message_id}`, tabindex: -1, dataset: { messageId: msg.message_id }, "aria-label": assistant ? "Assistant" : "You" },
      h("div", { class: "msg-meta" }, h("span", { class: "who" }, assistant ? "Assistant" : "You"), h("time", { datetime: new Date(msg.ts).toISOString() }, formatTime(msg.ts)), status ? h("span", { class: `tag status` }, status) : null),
      msg.reasoning ? h("details", { class: "reasoning" }, h("summary", null, "Reasoning"), h("div", { class: "reasoning-text" }, msg.reasoning)) : null,
      msg.commentary.length ? h("div", { class: "commentary" }, msg.commentary.map((c) => h("p", null, c))) : null,
      tools.length ? h("div", { class: "tools" }, tools) : null,
      msg.text || !msg.streaming || !tools.length ? body : null,
      media.length ? h("div", { class: "media" }, media) : null,
      parts.length ? h("div", { class: "runtime-footer" }, parts.map((p) => h("span", { title: p.title, dataset: { field: p.field } }, p.text))) : null,
    );
  }

  #renderTyping(): void {
    const on = Boolean(this.#current?.typing);
    clear(this.#typing);
    if (on) this.#typing.append(h("span", { class: "dots", "aria-hidden": "true" }, h("i"), h("i"), h("i")), " Agent is typing…");
    this.#typing.classList.toggle("on", on);
  }

  // ---------- composer ----------

  #renderComposer(): void {
    const lane = this.#current;
    const ch = lane && this.#channelOf(lane);
    const readOnly = Boolean(ch?.automation || (lane && this.#channels.get(lane.chat_id)?.automation));
    this.#composerArea.hidden = false;
    this.#composerArea.querySelector(".readonly-note")?.remove();
    const form = this.#composerArea.querySelector<HTMLElement>(".composer")!;
    form.hidden = readOnly;
    if (readOnly) this.#composerArea.append(h("p", { class: "readonly-note" }, "This is an automation channel: only the gateway posts here."));
    this.#autoThreadLabel.hidden = Boolean(lane?.thread_id);
  }

  #composerKey(event: KeyboardEvent): void {
    const listOpen = !this.#slashList.hidden && this.#slashMatches.length > 0;
    if (listOpen) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const n = this.#slashMatches.length;
        this.#slashActive = (this.#slashActive + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
        this.#renderSlash();
        return;
      }
      if (event.key === "Tab" || (event.key === "Enter" && !event.shiftKey)) {
        event.preventDefault();
        this.#completeSlash(this.#slashMatches[this.#slashActive]);
        return;
      }
      if (event.key === "Escape") {
        this.#slashList.hidden = true;
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void this.#send();
    }
  }

  #updateSlash(): void {
    const value = this.#textarea.value;
    const match = /^\/\S*$/.exec(value);
    this.#slashMatches = match
      ? this.#commands.filter((c) => [c.name, ...c.aliases].some((n) => n.startsWith(value)) && !(c.name === value && c.args_hint === "")).slice(0, 8)
      : [];
    this.#slashActive = 0;
    this.#renderSlash();
  }

  #renderSlash(): void {
    clear(this.#slashList);
    const open = this.#slashMatches.length > 0;
    this.#slashList.hidden = !open;
    if (!open) return this.#textarea.removeAttribute("aria-activedescendant");
    this.#slashMatches.forEach((c, i) => {
      const id = `slash-${i}`;
      const li = h(
        "li",
        { id, role: "option", "aria-selected": String(i === this.#slashActive), class: i === this.#slashActive ? "active" : "" },
        h("span", { class: "slash-name" }, c.name),
        c.args_hint ? h("span", { class: "slash-args" }, ` ${c.args_hint}`) : null,
        h("span", { class: "slash-desc" }, c.description),
      );
      li.addEventListener("mousedown", (event) => {
        event.preventDefault();
        this.#completeSlash(c);
      });
      this.#slashList.append(li);
    });
    this.#textarea.setAttribute("aria-activedescendant", `slash-${this.#slashActive}`);
  }

  #completeSlash(c: CommandEntry | undefined): void {
    if (!c) return;
    this.#textarea.value = `${c.name} `;
    this.#slashMatches = [];
    this.#renderSlash();
    this.#textarea.focus();
  }

  async #upload(file: File): Promise<void> {
    const id = ++this.#nextAttachment;
    const progress = h("progress", { max: 100, value: 0, "aria-label": `Uploading ${file.name}` });
    const remove = h("button", { type: "button", class: "icon small", "aria-label": `Remove ${file.name}` }, "×");
    const el = h("span", { class: "chip uploading", dataset: { file: file.name } }, h("span", { class: "chip-name" }, file.name), progress, remove);
    const attachment: Attachment = { id, name: file.name, el, progress };
    remove.addEventListener("click", () => {
      this.#attachments = this.#attachments.filter((a) => a.id !== id);
      el.remove();
    });
    this.#attachments.push(attachment);
    this.#chips.append(el);
    try {
      attachment.ref = await this.client.upload(file, { onProgress: (sent, total) => (progress.value = total ? Math.round((sent / total) * 100) : 100) });
      el.classList.remove("uploading");
      el.classList.add("ready");
      progress.remove();
    } catch (error) {
      attachment.failed = (error as Error).message;
      el.classList.remove("uploading");
      el.classList.add("failed");
      progress.remove();
      el.title = `Upload failed: ${attachment.failed}`;
      this.#toast(`Upload of ${file.name} failed: ${attachment.failed}`);
    }
  }

  async #send(): Promise<void> {
    const lane = this.#current;
    if (!lane) return;
    if (this.#attachments.some((a) => !a.ref && !a.failed)) {
      this.#toast("Wait for the uploads to finish.");
      return;
    }
    const text = this.#textarea.value;
    const ready = this.#attachments.filter((a) => a.ref);
    if (!text.trim() && ready.length === 0) return;
    const autoThread = this.#autoThread.checked && lane.thread_id === null;
    this.#textarea.value = "";
    this.#slashMatches = [];
    this.#renderSlash();
    const sentAttachments = this.#attachments;
    this.#attachments = [];
    clear(this.#chips);
    this.#sendButton.disabled = true;
    try {
      const echo = await this.client.sendMessage({
        chat_id: lane.chat_id,
        thread_id: lane.thread_id,
        text,
        ...(ready.length ? { media_refs: ready.map((a) => a.ref!.media_id) } : {}),
        ...(autoThread ? { auto_thread: true } : {}),
      });
      this.#messages.scrollTop = this.#messages.scrollHeight;
      if (echo.thread_id !== lane.thread_id) {
        this.#autoThread.checked = false;
        await this.openLane(echo.chat_id, echo.thread_id);
      }
    } catch (error) {
      if (!this.#textarea.value) this.#textarea.value = text;
      this.#attachments = sentAttachments;
      for (const a of sentAttachments) this.#chips.append(a.el);
      this.#toast(`Not sent: ${(error as Error).message}`);
    } finally {
      this.#sendButton.disabled = false;
      this.#textarea.focus();
    }
  }

  // ---------- search ----------

  async #search(query: string): Promise<void> {
    const box = this.#searchResults;
    clear(box);
    box.hidden = false;
    const close = h("button", { type: "button", class: "icon small", "aria-label": "Close search results", onclick: () => (box.hidden = true) }, "×");
    box.append(h("div", { class: "search-head" }, h("h2", null, "Search results"), close));
    if (!query.trim()) {
      box.append(h("p", { class: "empty" }, "Type something to search for."));
      return;
    }
    const status = h("p", { class: "empty" }, "Searching…");
    box.append(status);
    const result = await this.#guard("Search", () => this.client.request("search", { query, scope: "all", limit: 50 }));
    status.remove();
    if (!result) return;
    if (result.hits.length === 0) {
      box.append(h("p", { class: "empty" }, `Nothing found for “${query}”.`));
      return;
    }
    box.append(
      h(
        "ul",
        { class: "hits" },
        result.hits.map((hit) => {
          const ch = this.#channels.get(hit.thread_id ?? hit.chat_id);
          return h(
            "li",
            null,
            h(
              "button",
              { type: "button", class: "hit", onclick: () => void this.#jumpTo(hit) },
              h("span", { class: "hit-where" }, ch?.name ?? hit.chat_id, " · ", hit.role === "user" ? "You" : "Assistant", " · ", formatTime(hit.ts)),
              h("span", { class: "hit-snippet" }, hit.snippet),
            ),
          );
        }),
      ),
    );
  }

  async #jumpTo(hit: SearchHit): Promise<void> {
    await this.openLane(hit.chat_id, hit.thread_id);
    const lane = this.#current!;
    while (!lane.byId.has(hit.message_id) && lane.pager.hasMore) await this.#loadOlder(lane);
    const el = this.#msgEls.get(hit.message_id);
    if (!el) {
      this.#toast("That message is no longer there.");
      return;
    }
    if (window.matchMedia("(max-width: 900px)").matches) this.#searchResults.hidden = true;
    el.scrollIntoView({ block: "center" });
    el.classList.add("highlight");
    el.focus({ preventScroll: true });
    setTimeout(() => el.classList.remove("highlight"), 3000);
  }

  // ---------- settings, sign out, toasts ----------

  #settings(): void {
    const boxes = FOOTER_FIELDS.map(({ field, label }) => {
      const input = h("input", { type: "checkbox", checked: this.#footer.has(field), dataset: { field } });
      input.addEventListener("change", () => {
        if (input.checked) this.#footer.add(field as FooterField);
        else this.#footer.delete(field as FooterField);
        setFooterFields(this.#footer);
        this.#renderMessages();
      });
      return h("label", { class: "check" }, input, ` ${label}`);
    });
    const streaming = h("input", { type: "checkbox", checked: this.client.streaming, id: "setting-streaming" });
    streaming.addEventListener("change", () => {
      setStreamingSetting(streaming.checked);
      void this.client.setStreaming(streaming.checked).catch(() => undefined);
    });
    infoDialog("Settings", [
      h("fieldset", null, h("legend", null, "Runtime footer: show"), ...boxes),
      h("fieldset", null, h("legend", null, "Answers"), h("label", { class: "check" }, streaming, " Stream answers as they are written")),
      h("p", { class: "hint" }, "These settings belong to this browser."),
    ]);
  }

  async #checkSession(): Promise<void> {
    const status = await authStatus().catch(() => undefined);
    if (status?.enabled && status.user === null && !this.#destroyed) this.#opts.onUnauthorized();
  }

  async #signOut(): Promise<void> {
    await logout().catch(() => undefined);
    this.destroy();
    this.#opts.onSignedOut();
  }

  #toast(text: string): void {
    const el = h("div", { class: "toast" }, text);
    this.#toasts.append(el);
    setTimeout(() => el.remove(), 6000);
  }
}
