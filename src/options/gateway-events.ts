/**
 * The events a gateway emits to server-side code (`gateway.on(...)`).
 * @module
 */
import type { ChatId, ConnectionId, DeviceId, MessageId, Owner } from "../protocol/ids.js";

/** Events the gateway emits (`gateway.on(...)`). */
export interface GatewayEvents {
  /** A device completed `hello`. */
  connect: [info: { owner: Owner; deviceId: DeviceId; connectionId: ConnectionId }];
  /** A device's connection ended. */
  disconnect: [info: { owner: Owner | undefined; deviceId: DeviceId | undefined; connectionId: ConnectionId }];
  /** A turn began. */
  "turn:start": [info: { owner: Owner; chat_id: ChatId; thread_id: ChatId | null; message_id: MessageId }];
  /** A turn ended, with how. */
  "turn:end": [
    info: { owner: Owner; chat_id: ChatId; thread_id: ChatId | null; message_id: MessageId; status: string },
  ];
  /** Something unexpected happened; it was logged and reported to the client as `internal`. */
  error: [error: unknown];
}
