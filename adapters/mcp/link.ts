/**
 * What the MCP tools need from a gateway, and the link over the typed WebSocket client that the
 * stdio bridge uses (docs/PROTOCOL.md §20.2). The HTTP form links through a door's in-process
 * device instead (see `http.ts`); both speak the same frames a device sends.
 * @module
 */
import type { GatewayClient, SendInput } from "chat-gateway/client";
import type { RequestType } from "chat-gateway/protocol";

/** A frame the gateway sent to the bridge's device. */
export interface LinkFrame {
  type: string;
  id?: string;
  seq?: number;
  payload: Record<string, unknown>;
}

/**
 * One device of the gateway, as the MCP tools use it. A contract: the tools assume nothing else.
 */
export interface McpGatewayLink {
  /**
   * Sends a request frame and resolves with its response's payload. Rejects with an error that
   * carries the gateway's protocol `code` (`not_found`, `unsupported`, `rate_limited`, `auth`, …)
   * and a message a person can act on.
   */
  request(type: string, payload: Record<string, unknown>): Promise<Record<string, unknown>>;
  /**
   * Calls `listener` with every frame the device receives from now on, in order, until the
   * returned function is called. A `message.update` may carry the whole text or an append to the
   * text held (docs/PROTOCOL.md §12); the listener copes with both.
   */
  subscribe(listener: (frame: LinkFrame) => void): () => void;
  /**
   * The owner's open asks (docs/PROTOCOL.md §11), oldest first: each its picker frame's payload with
   * `kind` the picker's kind (`approval`, `confirm` or `model`).
   */
  openAsks(): Promise<Array<Record<string, unknown>>>;
}

/**
 * A link over a connected {@link GatewayClient}. The client should sync from the start of the
 * outbox (a cursor store starting at 0), so the asks raised before the bridge started are known.
 */
export function clientLink(client: GatewayClient): McpGatewayLink {
  return {
    async request(type, payload) {
      // A send cut off by a dropped connection is sent again with its client_msg_id: stored once.
      if (type === "message.send")
        return (await client.sendMessage(payload as unknown as SendInput)) as unknown as Record<string, unknown>;
      const response = await client.request(type as RequestType, payload as never);
      return response as unknown as Record<string, unknown>;
    },
    subscribe(listener) {
      const onFrame = (frame: LinkFrame) => listener({ ...frame, payload: frame.payload ?? {} });
      client.on("frame", onFrame as never);
      return () => client.off("frame", onFrame as never);
    },
    async openAsks() {
      await client.ready();
      return client.openAsks().map((ask) => ({ ...ask }));
    },
  };
}
