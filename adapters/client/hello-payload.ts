/**
 * The `hello` a client opens every socket with: its device, its caps and its push targets.
 * @module
 */
import { PROTOCOL_VERSION, type ClientPayloads } from "chat-gateway/protocol";
import type { GatewayClientOptions } from "./options.js";

/** The `hello` frame of one attempt, as sent; `streaming` is the current `caps.streaming`, `token` the one asked for this attempt. */
export function helloFrame(options: GatewayClientOptions, deviceId: string, streaming: boolean, token: string): string {
  return JSON.stringify({ type: "hello", id: "hello", payload: helloPayload(options, deviceId, streaming, token) });
}

function helloPayload(
  options: GatewayClientOptions,
  deviceId: string,
  streaming: boolean,
  token: string,
): ClientPayloads["hello"] {
  return {
    token,
    device_id: deviceId,
    device_name: options.deviceName ?? "",
    caps: {
      min_protocol: PROTOCOL_VERSION,
      media: options.media ?? true,
      push: options.push ?? "none",
      streaming,
      pickers: options.pickers ?? true,
      delta: options.delta ?? true,
    },
    ...(options.fcmToken ? { fcm_token: options.fcmToken } : {}),
    ...(options.ntfyTopic ? { ntfy_topic: options.ntfyTopic } : {}),
  };
}
