// A real gateway for the runtime suite: memory storage, the runtime under test, a WebSocket server
// on 127.0.0.1 and one device connected to it.
import { createGateway, type AgentRuntime, type GatewayOptions } from "chat-gateway";
import { memoryStorage } from "chat-gateway/storage/memory";
import { webSocketClient } from "./client-socket.js";
import { Device, type Frame } from "./device.js";

/** A gateway's complaints about a failing runtime are expected here; they would only clutter the output. */
const quiet = { info() {}, warn() {}, error() {} };

/** A running gateway with one signed-in device. */
export interface Wire {
  device: Device;
  close(): Promise<void>;
}

/** Starts a gateway around `runtime` on a WebSocket server and connects one device to it. */
export async function startWire(runtime: AgentRuntime, options: Partial<GatewayOptions> = {}): Promise<Wire> {
  const { listenWebSocket } = await import("chat-gateway/ws");
  const gateway = createGateway({ storage: memoryStorage(), runtime, logger: quiet, ...options });
  await gateway.start();
  const transport = await listenWebSocket(gateway, { port: 0, host: "127.0.0.1" });
  const device = new Device(await webSocketClient(transport.url));
  await device.hello();
  return {
    device,
    async close() {
      device.socket.close();
      await gateway.close();
      await transport.close();
    },
  };
}

/** The frames of one turn, from the echo of `message.send` to `typing {on: false}`. */
export interface WireTurn {
  echo: Frame;
  frames: Frame[];
  final: Frame;
}

/** Sends `text` to the default channel and waits for its turn to end. */
export async function wireTurn(device: Device, text: string, ms = 15_000): Promise<WireTurn> {
  const list = await device.request("channel.list");
  const chat = list.payload.channels.find((c: { is_default?: boolean }) => c.is_default) ?? list.payload.channels[0];
  const from = device.frames.length;
  const echo = await device.request("message.send", { chat_id: chat.chat_id, text });
  if (echo.type !== "message") throw new Error(`message.send was refused: ${JSON.stringify(echo)}`);
  await device.waitFor((f) => f.type === "typing" && f.payload.on === false, "the turn to end (typing off)", ms, from);
  const frames = device.frames.slice(from);
  const final = frames.find((f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id);
  if (!final) throw new Error(`the turn ended without a message.stop: ${JSON.stringify(frames.slice(-5))}`);
  return { echo, frames, final };
}
