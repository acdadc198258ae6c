/**
 * A notification raised by server code (`gateway.notify`), checked before it is stored: only the
 * seven kinds of docs/PROTOCOL.md §6 reach the wire, so a client's switch on `kind` stays complete.
 * @module
 */
import { validate } from "superstruct";
import type { Notification, NotificationKind } from "../contracts/records.js";
import type { ChatId, MessageId } from "../protocol/ids.js";
import { GatewayError } from "../protocol/errors.js";
import { notificationStruct } from "../protocol/record-structs.js";

/** What server-side code raises (`gateway.notify`); `ts` defaults to now. */
export interface NotifyInput {
  kind: NotificationKind;
  title: string;
  body: string;
  ts?: number;
  chat_id?: ChatId;
  thread_id?: ChatId | null;
  /**
   * The message this notification announces (an automation post, a scheduled run's answer): the
   * two are one event, pushed once (docs/PROTOCOL.md §15.2), by whichever of them is pushed
   * first. Not part of the stored `notification` frame.
   */
  message_id?: MessageId;
}

/** What server code gives `gateway.notify`; `ts` defaults to now. */
type NotificationInput = Omit<Notification, "ts" | "picker_id"> & { ts?: number };

/**
 * The notification to store, or a `GatewayError` `unsupported` naming the field at fault (a kind
 * outside the protocol's, a title that is not a string, a `ts` that is not an integer).
 */
export function checkedNotification(input: NotificationInput, now: number): Notification {
  const notification: Notification = { kind: input.kind, title: input.title, body: input.body, ts: input.ts ?? now };
  if (input.chat_id !== undefined) notification.chat_id = input.chat_id;
  if (input.thread_id !== undefined) notification.thread_id = input.thread_id;
  const [failure] = validate(notification, notificationStruct);
  if (failure) {
    const field = failure.path.join(".");
    const prefix = `At path: ${field} -- `;
    const detail = failure.message.startsWith(prefix) ? failure.message.slice(prefix.length) : failure.message;
    throw new GatewayError("unsupported", `gateway.notify: field "${field}": ${detail}`);
  }
  return notification;
}
