/**
 * The devices of bench/fanout-stream.ts: each side's connections, what they count of the frames
 * they receive (checking a delta device's joined appends against `final_text`), and the requests
 * that set up a side's lane.
 * @module
 */
import { WebSocket } from "ws";
import type { Side } from "./fanout-stream.js";

export interface Device {
  ws: WebSocket;
  bytes: number;
  updateBytes: number;
  updates: number;
  text: string;
  stopped: boolean;
  /** The joined appends matched final_text (delta devices; full-text devices: the last text was a prefix of it). */
  consistent: boolean;
}

export type Frame = { type: string; payload: Record<string, any> };

function onFrame(device: Device, data: Buffer): void {
  device.bytes += data.byteLength;
  const frame = JSON.parse(data.toString("utf8")) as Frame;
  const p = frame.payload;
  if (frame.type === "message.start") device.text = "";
  else if (frame.type === "message.update") {
    device.updateBytes += data.byteLength;
    device.updates++;
    if (typeof p.text === "string") device.text = p.text;
    else if (p.offset === device.text.length) device.text += p.append;
    else device.consistent = false;
  } else if (frame.type === "message.stop") {
    device.consistent &&= (p.final_text as string).startsWith(device.text);
    device.stopped = true;
  }
}

export async function connect(side: Side, port: number, count: number): Promise<Device[]> {
  const deflate = side.startsWith("deflate");
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/gateway?side=${side}`, { perMessageDeflate: deflate });
      const device: Device = { ws, bytes: 0, updateBytes: 0, updates: 0, text: "", stopped: false, consistent: true };
      await new Promise((resolve, reject) => {
        ws.once("open", resolve);
        ws.once("error", reject);
      });
      const ok = new Promise<void>((resolve, reject) =>
        ws.once("message", (data) =>
          (JSON.parse(String(data)) as Frame).type === "hello.ok" ? resolve() : reject(new Error(String(data))),
        ),
      );
      ws.send(
        JSON.stringify({
          type: "hello",
          payload: { token: side, device_id: `${side}-${i}`, caps: { delta: side.startsWith("delta") } },
        }),
      );
      await ok;
      ws.on("message", (data: Buffer, isBinary) => isBinary || onFrame(device, data));
      return device;
    }),
  );
}

let turn = 0;

/** Send a request on a device's socket and wait for the frame answering it. */
function ask(ws: WebSocket, type: string, payload: object): Promise<Record<string, any>> {
  const id = `r${++turn}`;
  return new Promise((resolve, reject) => {
    const onMessage = (data: Buffer) => {
      const frame = JSON.parse(String(data)) as Frame & { id?: string };
      if (frame.id !== id) return;
      ws.off("message", onMessage);
      if (frame.type === "error") reject(new Error(JSON.stringify(frame.payload)));
      else resolve(frame.payload);
    };
    ws.on("message", onMessage);
    ws.send(JSON.stringify({ type, id, payload }));
  });
}

export async function laneOf(side: Side, devices: Device[]): Promise<{ chat_id: string; thread_id: string | null }> {
  if (side !== "delta-thread") return { chat_id: "default", thread_id: null };
  const channel = await ask(devices[0]!.ws, "channel.create", { name: "Fan-out bench", kind: "channel" });
  const thread = await ask(devices[0]!.ws, "channel.create", {
    name: "A thread",
    kind: "thread",
    parent_chat_id: channel.chat_id,
  });
  return { chat_id: channel.chat_id, thread_id: thread.chat_id };
}
