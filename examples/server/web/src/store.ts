// The UI state: channels, the messages of each lane, streaming and typing state, and which lane is
// on screen. Fed by the typed client's events; views render from it and are told what changed.
import type { AnsweredAsk, Channel, HistoryItem } from "chat-gateway";
import type { GatewayClient, HistoryPager } from "chat-gateway/client";
import { applyRunning, blankAnswer, fromHistory, toolRow, type Msg } from "./msg.js";

export interface Lane {
  key: string;
  chat_id: string;
  thread_id: string | null;
  messages: Msg[];
  byId: Map<string, Msg>;
  pager: HistoryPager;
  loading: Promise<void> | undefined;
  loaded: boolean;
  typing: boolean;
}

export interface LaneRef {
  chat_id: string;
  thread_id: string | null;
}

/** What the views hear from the store; each call names the part that changed. */
export interface StoreListener {
  /** The channel list or an unread count changed. */
  channelsChanged(): void;
  /** One channel's fields changed (the conversation header may show it). */
  channelChanged(chatId: string): void;
  /** A channel is gone; the lane on screen may have been in it. */
  channelDeleted(chatId: string): void;
  /** One message was added or changed as a whole. */
  messageChanged(lane: Lane, msg: Msg): void;
  /** A streamed update changed a message's text or reasoning only. */
  messageStreamed(lane: Lane, msg: Msg): void;
  messagesRemoved(lane: Lane, ids: string[]): void;
  typingChanged(): void;
  /** The agent's open asks changed (opened, answered anywhere, expired). */
  asksChanged(): void;
  /** A lane's queue of waiting messages or its running answer changed (docs/PROTOCOL.md §14). */
  liveChanged(): void;
}

export const laneKey = (chatId: string, threadId: string | null) => `${chatId}|${threadId ?? ""}`;

export class Store {
  readonly channels = new Map<string, Channel>();
  readonly #lanes = new Map<string, Lane>();
  #current: Lane | undefined;
  readonly #posts = new Map<string, number>();
  readonly #client: GatewayClient;
  readonly #listener: StoreListener;

  constructor(client: GatewayClient, listener: StoreListener) {
    this.#client = client;
    this.#listener = listener;
    this.#wireChannels();
    this.#wireMessages();
    this.#wireStreaming();
    client.on("asks", () => listener.asksChanged());
    client.on("queues", () => listener.liveChanged());
    client.on("turns", () => {
      for (const lane of this.#lanes.values()) if (lane.loaded) this.#mergeRunning(lane);
      listener.liveChanged();
    });
  }

  /** The lane on screen. */
  get current(): Lane | undefined {
    return this.#current;
  }

  channelOf(lane: LaneRef): Channel | undefined {
    return this.channels.get(lane.thread_id ?? lane.chat_id);
  }

  defaultChannel(): Channel | undefined {
    return [...this.channels.values()].find((c) => c.is_default);
  }

  /** Whether an answer is being written in this lane, as the gateway says (docs/PROTOCOL.md §14.3). */
  running(lane: LaneRef): boolean {
    return this.#client.runningTurns(lane).length > 0;
  }

  /** The lane's waiting messages, in the order they will run (docs/PROTOCOL.md §14.4). */
  queue(lane: LaneRef): string[] {
    return this.#client.laneQueue(lane);
  }

  /** Whether the agent waits for an answer in this lane (an open ask). */
  waiting(lane: LaneRef): boolean {
    return this.#client.openAsks(lane).length > 0;
  }

  /**
   * Unread answers of a sidebar entry (a channel with its threads, or a thread), as the gateway
   * counts them for every device (docs/PROTOCOL.md §15): a read on any device clears them.
   */
  unread(lane: LaneRef): number {
    return this.#client.unreadCounts()[lane.thread_id ?? lane.chat_id] ?? 0;
  }

  /** Put a lane on screen; its channel's new automation posts start over. */
  select(chatId: string, threadId: string | null): Lane {
    const lane = this.lane(chatId, threadId);
    this.#current = lane;
    this.#posts.delete(chatId);
    return lane;
  }

  /** A webhook post or scheduled answer (`notification {kind: "cron"}`) landed in a channel not on screen. */
  notePost(chatId: string): void {
    if (this.#current?.chat_id !== chatId) this.#posts.set(chatId, (this.#posts.get(chatId) ?? 0) + 1);
  }

  /** New posts of a channel since it was last on screen (its notification badge). */
  posts(chatId: string): number {
    return this.#posts.get(chatId) ?? 0;
  }

  /** Forget every lane (after a reset); returns the lane that was on screen. */
  forgetLanes(): Lane | undefined {
    const current = this.#current;
    this.#lanes.clear();
    this.#current = undefined;
    return current;
  }

  setChannels(list: Channel[]): void {
    this.channels.clear();
    for (const ch of list) this.channels.set(ch.chat_id, ch);
    this.#listener.channelsChanged();
  }

  upsertChannel(ch: Channel): void {
    this.channels.set(ch.chat_id, { ...this.channels.get(ch.chat_id), ...ch });
    if (ch.is_default) {
      for (const other of this.channels.values())
        if (other.chat_id !== ch.chat_id && other.is_default) other.is_default = false;
    }
    this.#listener.channelsChanged();
    this.#listener.channelChanged(ch.chat_id);
  }

  deleteChannel(chatId: string): void {
    this.channels.delete(chatId);
    for (const [key, lane] of this.#lanes)
      if (lane.chat_id === chatId || lane.thread_id === chatId) this.#lanes.delete(key);
    this.#listener.channelsChanged();
    this.#listener.channelDeleted(chatId);
  }

  /** Live typing state is dropped on a reconnect: it comes back with the next frames or the sync. */
  clearTyping(): void {
    for (const lane of this.#lanes.values()) lane.typing = false;
    this.#listener.typingChanged();
  }

  lane(chatId: string, threadId: string | null): Lane {
    const key = laneKey(chatId, threadId);
    let lane = this.#lanes.get(key);
    if (!lane) {
      const pager = this.#client.historyPager({ chat_id: chatId, thread_id: threadId }, { limit: 50 });
      lane = {
        key,
        chat_id: chatId,
        thread_id: threadId,
        messages: [],
        byId: new Map(),
        pager,
        loading: undefined,
        loaded: false,
        typing: false,
      };
      this.#lanes.set(key, lane);
    }
    return lane;
  }

  /** Add an older history page in front of a lane's messages; the lane counts as loaded. */
  prependPage(lane: Lane, page: HistoryItem[]): void {
    const older = page.filter((m) => !lane.byId.has(m.message_id)).map(fromHistory);
    for (const m of older) lane.byId.set(m.message_id, m);
    lane.messages = [...older, ...lane.messages];
    lane.loaded = true;
    this.#mergeRunning(lane);
  }

  /**
   * The lane's running answers as the gateway sent them (a device joining mid-turn gets them before
   * its history is loaded, docs/PROTOCOL.md §14.3): text so far and running tools, not doubled.
   */
  #mergeRunning(lane: Lane): void {
    for (const turn of this.#client.runningTurns(lane)) {
      const msg = this.#ensureStreaming(lane, turn.message_id);
      const changed = applyRunning(msg, turn);
      if (changed) this.#listener.messageChanged(lane, msg);
    }
  }

  /**
   * An ask of an answer ended (live `picker.resolved`): its line shows at once, under that answer;
   * the answer's own `asks` replace it when it ends, keyed by `picker_id`, so nothing doubles.
   */
  noteAnswered(lane: LaneRef, messageId: string, entry: AnsweredAsk): void {
    const loaded = this.#laneIfLoaded(lane.chat_id, lane.thread_id);
    const msg = loaded?.byId.get(messageId);
    if (!loaded || !msg || msg.asks.some((a) => a.picker_id === entry.picker_id)) return;
    msg.asks = [...msg.asks, entry];
    this.#listener.messageChanged(loaded, msg);
  }

  #laneIfLoaded(chatId: string, threadId: string | null): Lane | undefined {
    const lane = this.#lanes.get(laneKey(chatId, threadId));
    return lane?.loaded ? lane : undefined;
  }

  #add(lane: Lane, msg: Msg): Msg {
    lane.messages.push(msg);
    lane.byId.set(msg.message_id, msg);
    return msg;
  }

  #ensureStreaming(lane: Lane, id: string): Msg {
    return lane.byId.get(id) ?? this.#add(lane, blankAnswer(id));
  }

  #wireChannels(): void {
    const c = this.#client;
    c.on("channel.created", (ch) => this.upsertChannel(ch));
    c.on("channel.renamed", (ch) => this.upsertChannel(ch));
    c.on("channel.deleted", (p) => this.deleteChannel(p.chat_id));
    c.on("unread", () => this.#listener.channelsChanged());
    c.on("typing", (p) => {
      const lane = this.lane(p.chat_id, p.thread_id);
      lane.typing = p.on;
      if (lane === this.#current) this.#listener.typingChanged();
    });
  }

  #wireMessages(): void {
    const c = this.#client;
    c.on("message", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = lane.byId.get(p.message_id) ?? this.#add(lane, fromHistory(p));
      const next = fromHistory(p);
      Object.assign(msg, next, {
        tools: p.tools ? next.tools : msg.tools,
        commentary: msg.commentary,
        asks: p.asks ? next.asks : msg.asks,
      });
      this.#listener.messageChanged(lane, msg);
    });
    c.on("message.stop", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = lane.byId.get(p.message_id) ?? this.#add(lane, { ...blankAnswer(p.message_id), ts: p.ts });
      Object.assign(msg, {
        text: p.final_text,
        reasoning: p.reasoning ?? "",
        runtime: p.runtime,
        model: p.model ?? msg.model,
        tokens: p.tokens ?? msg.tokens,
        status: p.status,
        media: p.media ?? msg.media,
        ts: p.ts,
        streaming: false,
      });
      if (p.tools) msg.tools = p.tools.map(toolRow);
      if (p.asks) msg.asks = p.asks;
      this.#listener.messageChanged(lane, msg);
    });
    c.on("message.deleted", (p) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      for (const id of p.message_ids) lane.byId.delete(id);
      lane.messages = lane.messages.filter((m) => lane.byId.has(m.message_id));
      this.#listener.messagesRemoved(lane, p.message_ids);
    });
    c.on("media.offer", (p) => {
      if (!p.message_id || !p.chat_id) return;
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id ?? null);
      const msg = lane?.byId.get(p.message_id);
      if (!lane || !msg || msg.media.some((m) => m.media_id === p.media_id)) return;
      msg.media.push({ media_id: p.media_id, kind: p.kind, mime: p.mime, size: p.size, filename: p.filename });
      this.#listener.messageChanged(lane, msg);
    });
  }

  /** Frames of an answer being written: they change the streaming message of a loaded lane. */
  #wireStreaming(): void {
    const c = this.#client;
    const streaming = (
      p: { chat_id: string; thread_id: string | null; message_id: string },
      change: (msg: Msg) => void,
      streamed = false,
    ) => {
      const lane = this.#laneIfLoaded(p.chat_id, p.thread_id);
      if (!lane) return;
      const msg = this.#ensureStreaming(lane, p.message_id);
      change(msg);
      if (streamed) this.#listener.messageStreamed(lane, msg);
      else this.#listener.messageChanged(lane, msg);
    };
    c.on("message.start", (p) => streaming(p, () => undefined));
    c.on("message.update", (p) =>
      streaming(
        p,
        (msg) => {
          // Whole text: the client has applied the delta appends (docs/PROTOCOL.md §12).
          msg.text = p.text;
          if (p.reasoning !== undefined) msg.reasoning = p.reasoning;
          if (p.tokens !== undefined) msg.tokens = p.tokens;
          if (p.model !== undefined) msg.model = p.model;
        },
        true,
      ),
    );
    c.on("commentary", (p) => streaming(p, (msg) => msg.commentary.push(p.text)));
    // Keyed by index: a device joining mid-turn may get a tool's start twice (docs/PROTOCOL.md §14.3).
    c.on("tool.start", (p) =>
      streaming(
        p,
        (msg) =>
          void (
            msg.tools.some((t) => t.index === p.index) ||
            msg.tools.push({ index: p.index, name: p.name, preview: p.preview, args: p.args })
          ),
      ),
    );
    c.on("tool.end", (p) =>
      streaming(p, (msg) => {
        let row = msg.tools.find((t) => t.index === p.index);
        if (!row) {
          row = { index: p.index, name: p.name, preview: "", args: {} };
          msg.tools.push(row);
        }
        Object.assign(row, { output: p.output, duration: p.duration, ok: p.ok });
      }),
    );
  }
}
