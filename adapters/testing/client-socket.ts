// The device end of a transport, as the suites drive it: a small socket interface, and one on a
// WebSocket (package `ws`, a dependency of chat-gateway, loaded only when a suite needs it).

/** What a device's socket must do for the suites: the client side of a user's transport. */
export interface ClientSocket {
  /** Send a text message (`string`) or a binary one (`Uint8Array`). */
  send(data: string | Uint8Array): void;
  /** Receive every message: text as `string`, binary as `Uint8Array`, in arrival order. */
  onMessage(listener: (data: string | Uint8Array) => void): void;
  /** Called once when the socket closes, with the close code the peer sent (1006 when none). */
  onClose(listener: (code: number) => void): void;
  /** Close from the device side (code 1000). */
  close(): void;
}

/**
 * Opens a {@link ClientSocket} on a WebSocket URL with the package `ws`, resolving once it is
 * open: the device end for a WebSocket-based transport in `describeConnectionConformance`.
 *
 * ```ts
 * describeConnectionConformance("my ws server", async (gateway) => {
 *   const server = await myWebSocketServer(gateway);
 *   return { connect: () => webSocketClient(server.url), close: () => server.close() };
 * });
 * ```
 */
export async function webSocketClient(url: string): Promise<ClientSocket> {
  const { WebSocket } = await import("ws");
  const ws = new WebSocket(url, { perMessageDeflate: false });
  // Listeners added before the socket opens would miss nothing, but the caller only gets the
  // socket once it is open: buffer what arrives in between.
  const early: Array<string | Uint8Array> = [];
  let deliver: ((data: string | Uint8Array) => void) | undefined;
  ws.on("message", (data, isBinary) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    const message = isBinary ? new Uint8Array(bytes) : bytes.toString("utf8");
    if (deliver) deliver(message);
    else early.push(message);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  ws.on("error", () => undefined);
  return {
    send: (data) => ws.send(data, { binary: typeof data !== "string" }),
    onMessage(listener) {
      deliver = listener;
      for (const message of early.splice(0)) listener(message);
    },
    onClose: (listener) => ws.once("close", (code) => listener(code)),
    close: () => ws.close(1000),
  };
}
