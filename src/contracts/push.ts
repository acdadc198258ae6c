/**
 * The `PushSender` contract: how the gateway reaches a device that is not connected.
 * @module
 */
import type { ChatId, MessageId, Owner } from "../protocol/ids.js";
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
  /**
   * What tapping the push opens: the lane's URL on the gateway's public URL, or the lane's path
   * when no public URL is known (docs/PROTOCOL.md §21). Set by the gateway.
   */
  url?: string;
  /**
   * The buttons of an ask's push to this device (docs/PROTOCOL.md §21), set by the gateway per
   * target. A sender shows each as a button that posts `{"token": token}` to `url`; the token is a
   * credential: never put it in a URL or a log line.
   */
  actions?: PushAction[];
  /**
   * A clearing push (docs/PROTOCOL.md §21): the ask was answered elsewhere, so the notification of
   * its tag (`picker_id`, else `message_id`) is replaced or removed. Web Push replaces it with
   * this text, ntfy clears it by sequence id, FCM sends data `{dismiss: tag}`.
   */
  clear?: boolean;
}

/** One button of an ask's push: it selects `option_id` when its token is posted to `url`. */
export interface PushAction {
  option_id: string;
  title: string;
  /** A single-use action token (docs/PROTOCOL.md §21). */
  token: string;
  /** `<public URL>/api/asks/{picker_id}/act`, or that path alone when no public URL is known. */
  url: string;
}

/**
 * Delivers a push to one device. The gateway picks, for each device whose `caps.push` is not
 * `"none"`, the first sender whose `name` equals that `caps.push` and whose `accepts` is true, and
 * retries a rejected `send` with backoff a few times; a failure is logged and never breaks a turn,
 * and a target whose pushes keep failing rests before it is tried again (docs/PROTOCOL.md §6).
 * `send` talks to a remote party: it must settle within a bounded time and read a bounded answer,
 * as the built-in senders do.
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
  /**
   * Optional. After `send` rejected with a {@link PushSendError} whose `gone` is true (the push
   * service says the target no longer exists: Web Push 404 or 410), or after the target's pushes
   * failed 5 times in a row (docs/PROTOCOL.md §6), the gateway stores what this
   * returns for the device: `stored` (the record as it is now) without the target that `pushed`
   * (the record the push was sent for) had, or undefined to leave it, when `stored` already holds
   * another target. Without it a gone target stays and is tried again on the next push.
   */
  forget?(stored: Device, pushed: Device): Device | undefined;
}

/**
 * A push failure; `permanent` means retrying cannot help (bad token, 4xx other than 429); `gone`
 * (implies permanent) that the target itself no longer exists, so the gateway drops it from the
 * device through {@link PushSender.forget}.
 */
export class PushSendError extends Error {
  readonly permanent: boolean;
  readonly gone: boolean;
  constructor(message: string, options: { permanent: boolean; gone?: boolean; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = "PushSendError";
    this.gone = options.gone === true;
    this.permanent = options.permanent || this.gone;
  }
}
