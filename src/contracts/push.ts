/**
 * The `PushSender` contract: how the gateway reaches a device that is not connected.
 * @module
 */
import type { ChatId, MessageId, Owner } from "../ids.js";
import type { Device } from "./records.js";

/** What a push says. */
export interface PushMessage {
  /** `message` for a final assistant message, `notification` for a gateway notice. */
  kind: "message" | "notification";
  title: string;
  body: string;
  chat_id?: ChatId;
  thread_id?: ChatId | null;
  message_id?: MessageId;
  /** The notification kind, for `kind: "notification"`. */
  notification_kind?: string;
  /** The open ask a notification of kind `approval` or `clarify` is about (docs/PROTOCOL.md §11). */
  picker_id?: string;
}

/**
 * Delivers a push to one device. The gateway picks, for each device whose `caps.push` is not
 * `"none"`, the first sender whose `name` equals that `caps.push` and whose `accepts` is true, and
 * retries a rejected `send` with backoff a few times; a failure is logged and never breaks a turn.
 */
export interface PushSender {
  /**
   * The push channel this sender serves, as devices declare it in `hello.caps.push` ("ntfy",
   * "fcm"); also used in logs.
   */
  readonly name: string;
  /** True when this sender can reach the device (it has this sender's token or topic). */
  accepts(device: Device): boolean;
  /** Deliver. Reject on failure; a {@link PushSendError} with `permanent` true is not retried. */
  send(owner: Owner, device: Device, message: PushMessage): Promise<void>;
}

/** A push failure; `permanent` means retrying cannot help (bad token, 4xx other than 429). */
export class PushSendError extends Error {
  readonly permanent: boolean;
  constructor(message: string, options: { permanent: boolean; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = "PushSendError";
    this.permanent = options.permanent;
  }
}
