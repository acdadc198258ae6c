/**
 * The gateway → client payloads under the client's names. Each is the type derived from its struct
 * in `chat-gateway/protocol` (the home of the frame types themselves), so the client and the
 * gateway cannot drift.
 * Types only: nothing here exists at run time.
 * @module
 */
import type { ServerPayloads } from "chat-gateway/protocol";

/** Where a conversation frame belongs: a channel and, for a thread, the thread's own id (null in the channel's flat lane). */
export type LaneRef = Pick<ServerPayloads["typing"], "chat_id" | "thread_id">;
/** `hello.ok`: the gateway accepted the device (docs/PROTOCOL.md §2.1). */
export type HelloOkPayload = ServerPayloads["hello.ok"];
/** `message`: a whole message (a user echo, or a non-streamed assistant answer). */
export type MessagePayload = ServerPayloads["message"];
/** `message.start`: a streamed assistant answer begins. */
export type MessageStartPayload = ServerPayloads["message.start"];
/**
 * `message.update` as the client hands it to handlers: the full current text of a streamed answer
 * (replace, do not append). With delta updates (docs/PROTOCOL.md §12) the gateway sends
 * `offset`/`append` instead; the client applies them and fills in `text` (and `reasoning`)
 * before the event, so `text` is always there. The raw delta fields stay in the payload.
 */
export type MessageUpdatePayload = ServerPayloads["message.update"] & { text: string };
/** `message.stop`: a streamed answer ended; the stored final form of it. */
export type MessageStopPayload = ServerPayloads["message.stop"];
/** `message.deleted`: drop these messages from the lane. */
export type MessageDeletedPayload = ServerPayloads["message.deleted"];
/** `commentary`: an intermediate assistant beat of a running answer. */
export type CommentaryPayload = ServerPayloads["commentary"];
/** `tool.start`: a tool call began, with its full arguments. */
export type ToolStartPayload = ServerPayloads["tool.start"];
/** `tool.end`: a tool call ended (`duration` in seconds). */
export type ToolEndPayload = ServerPayloads["tool.end"];
/** `typing`: the agent is (or stopped) working in a lane. */
export type TypingPayload = ServerPayloads["typing"];
/** `channel.list`: every channel and thread, archived included, favorites first. */
export type ChannelListPayload = ServerPayloads["channel.list"];
/** `channel.deleted`. */
export type ChannelDeletedPayload = ServerPayloads["channel.deleted"];
/** `search.results`: hits, best match first. */
export type SearchResultsPayload = ServerPayloads["search.results"];
/** `history`: one page of a lane, oldest first; `oldest_message_id` is the next `before_message_id`. */
export type HistoryPayload = ServerPayloads["history"];
/** `commands.catalog`. */
export type CommandsCatalogPayload = ServerPayloads["commands.catalog"];
/** `media.offer`: media the gateway has for the device, tied to the answer that produced it. */
export type MediaOfferPayload = ServerPayloads["media.offer"];
/** `media.upload.ack`: `ok` false when the bytes did not match the declared size or sha256. */
export type MediaUploadAckPayload = ServerPayloads["media.upload.ack"];
/** `media.pull.end`: the last chunk of a download was sent. */
export type MediaPullEndPayload = ServerPayloads["media.pull.end"];
/** `error`: a request failed, or (without an id) the connection has a problem. */
export type ErrorPayload = ServerPayloads["error"];
/** `pong`. */
export type PongPayload = ServerPayloads["pong"];
/** `sync.done`: the replay ended; `reset` means the cursor was too old and history must be refetched. */
export type SyncDonePayload = ServerPayloads["sync.done"];
/** `picker.approval`: approve or deny an action (docs/PROTOCOL.md §11). */
export type PickerApprovalPayload = ServerPayloads["picker.approval"];
/** `picker.confirm`: a question; a clarification when `allow_text` is true. */
export type PickerConfirmPayload = ServerPayloads["picker.confirm"];
/** `picker.model`: choose the lane's model. */
export type PickerModelPayload = ServerPayloads["picker.model"];
/** `picker.resolved`: how an ask ended. */
export type PickerResolvedPayload = ServerPayloads["picker.resolved"];
/** `commands.complete`: completions of a typed slash command. */
export type CommandsCompletePayload = ServerPayloads["commands.complete"];
/** An ask still waiting for an answer, as the client tracks it: its picker frame's payload and its kind. */
export type OpenAsk =
  | ({ kind: "approval" } & PickerApprovalPayload)
  | ({ kind: "confirm" } & PickerConfirmPayload)
  | ({ kind: "model" } & PickerModelPayload);
