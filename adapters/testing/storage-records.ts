/**
 * Records for the storage conformance suites: small builders with fixed, readable values.
 * @module
 */
import type { Channel, Device, MediaRecord, MediaRef, StoredMessage } from "chat-gateway";

/** Two owners, to check that nothing crosses between them. */
export const A = "alice";
export const B = "bob";

export function channel(chat_id: string, extra: Partial<Channel> = {}): Channel {
  return {
    chat_id,
    name: `name ${chat_id}`,
    kind: "channel",
    parent_chat_id: null,
    is_default: false,
    archived: false,
    ...extra,
  };
}

export function thread(chat_id: string, parent: string): Channel {
  return channel(chat_id, { kind: "thread", parent_chat_id: parent });
}

export function mediaRef(media_id: string): MediaRef {
  return { media_id, kind: "image", mime: "image/png", size: 3, filename: `${media_id}.png` };
}

export function media(owner: string, media_id: string): MediaRecord {
  return { ...mediaRef(media_id), owner, sha256: "ab".repeat(32), created_ts: 1_700_000_000_000 };
}

/** Each message is a little newer than the one made before it. */
let clock = 1_700_000_000_000;
export function msg(message_id: string, extra: Partial<StoredMessage> = {}): StoredMessage {
  return {
    message_id,
    role: "user",
    text: `text of ${message_id}`,
    reasoning: "",
    ts: ++clock,
    media: [],
    chat_id: "c1",
    thread_id: null,
    ...extra,
  };
}

export function device(device_id: string, extra: Partial<Device> = {}): Device {
  return {
    device_id,
    device_name: `phone ${device_id}`,
    caps: { min_protocol: 1, media: true, push: "none", streaming: true },
    last_seen: 1_700_000_000_000,
    ...extra,
  };
}

export const ids = (ms: Array<{ message_id: string }>) => ms.map((m) => m.message_id);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The describe label of a capability's tests: checked as declared, or what stands in when it is not. */
export const capabilityLabel = (name: string, native: boolean, absent = "core fallback") =>
  `${name} (${native ? "capability" : absent})`;
