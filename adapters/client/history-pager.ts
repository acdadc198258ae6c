/**
 * The history pager: a lane's history read backwards, one page per `history` request.
 * @module
 */
import type { ChatId, HistoryItem, MessageId } from "chat-gateway";
import type { RequestPayload, ResponsePayload } from "chat-gateway/protocol";
import type { RequestOptions } from "./options.js";

/** A lane to page through: a channel, and a thread of it or null for the flat lane. */
export interface LaneQuery {
  chat_id: ChatId;
  thread_id?: ChatId | null;
}

/** What the pager asks of the client: one `history` request (a `GatewayClient` is one). */
export interface HistoryRequester {
  request(
    type: "history",
    payload: RequestPayload<"history">,
    options?: RequestOptions,
  ): Promise<ResponsePayload<"history">>;
}

/** Pages backwards through a lane's history with `before_message_id` (docs/PROTOCOL.md §5). */
export class HistoryPager {
  readonly #client: HistoryRequester;
  readonly #lane: LaneQuery;
  readonly #limit: number | undefined;
  #oldest: MessageId | null = null;
  #hasMore = true;

  /** Use {@link GatewayClient.historyPager}. */
  constructor(client: HistoryRequester, lane: LaneQuery, limit?: number) {
    this.#client = client;
    this.#lane = lane;
    this.#limit = limit;
  }

  /** False once the oldest page was read. */
  get hasMore(): boolean {
    return this.#hasMore;
  }

  /** The oldest message id read so far. */
  get oldestMessageId(): MessageId | null {
    return this.#oldest;
  }

  /** The next older page, oldest first; empty once there is nothing more. */
  async next(options?: RequestOptions): Promise<HistoryItem[]> {
    if (!this.#hasMore) return [];
    const page = await this.#client.request(
      "history",
      {
        chat_id: this.#lane.chat_id,
        thread_id: this.#lane.thread_id ?? null,
        ...(this.#oldest ? { before_message_id: this.#oldest } : {}),
        ...(this.#limit ? { limit: this.#limit } : {}),
      },
      options,
    );
    this.#hasMore = page.has_more && page.oldest_message_id !== null;
    if (page.oldest_message_id) this.#oldest = page.oldest_message_id;
    return page.messages;
  }

  /** Every page, newest first, until the start of the lane. */
  async *[Symbol.asyncIterator](): AsyncGenerator<HistoryItem[]> {
    while (this.#hasMore) {
      const page = await this.next();
      if (page.length > 0) yield page;
    }
  }
}
