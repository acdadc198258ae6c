/**
 * The device side of bench/media.ts: one WebSocket connection that uploads a file in 256 KiB
 * binary chunks (waiting whenever more than 1 MiB is queued) and pulls it back, checking every
 * chunk's offset and the sha256 of what comes back.
 * @module
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { WebSocket } from "ws";
import { decodeChunk, encodeChunk } from "chat-gateway/protocol";

const CHUNK_BYTES = 256 * 1024;
const HIGH_WATER = 1024 * 1024;
const STEP_TIMEOUT_MS = 120_000;

interface Frame {
  type: string;
  id?: string;
  payload?: Record<string, unknown>;
}

/** A device connection that hands out text frames by request id and binary chunks to a listener. */
export class Device {
  readonly ws: WebSocket;
  readonly #byId = new Map<string, (f: Frame) => void>();
  onBinary: (data: Buffer) => void = () => undefined;
  lastError: Frame | undefined;

  constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data: Buffer, isBinary) => {
      if (isBinary) return this.onBinary(data);
      const frame = JSON.parse(data.toString("utf8")) as Frame;
      if (frame.type === "error") this.lastError = frame;
      const waiter = frame.id !== undefined ? this.#byId.get(frame.id) : undefined;
      if (waiter) {
        this.#byId.delete(frame.id!);
        waiter(frame);
      }
    });
  }

  static async connect(port: number): Promise<Device> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/gateway`, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    const device = new Device(ws);
    const ok = await device.request("hello", { token: "", device_id: "bench-media", device_name: "media bench" });
    if (ok.type !== "hello.ok") throw new Error(`hello failed: ${JSON.stringify(ok)}`);
    return device;
  }

  #next = 0;
  request(type: string, payload: Record<string, unknown>, timeoutMs = STEP_TIMEOUT_MS): Promise<Frame> {
    const id = `r${++this.#next}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`${type}: no answer in ${timeoutMs} ms (last error: ${JSON.stringify(this.lastError)})`)),
        timeoutMs,
      );
      this.#byId.set(id, (f) => {
        clearTimeout(timer);
        resolve(f);
      });
      this.ws.send(JSON.stringify({ type, id, payload }));
    });
  }

  send(type: string, payload: Record<string, unknown>): void {
    this.ws.send(JSON.stringify({ type, payload }));
  }

  /** Send one binary message; resolves when it has been written to the socket. */
  sendBinary(data: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) =>
      this.ws.send(data, { binary: true }, (error) => (error ? reject(error) : resolve())),
    );
  }
}

export async function upload(device: Device, file: string, size: number, ref: string, sha256: string): Promise<number> {
  const t0 = performance.now();
  device.send("media.upload.start", {
    media_ref: ref,
    kind: "document",
    mime: "application/octet-stream",
    size,
    filename: "bench.bin",
  });
  let offset = 0;
  let lastWrite: Promise<void> = Promise.resolve();
  for await (const piece of createReadStream(file, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    lastWrite = device.sendBinary(encodeChunk(ref, offset, piece));
    offset += piece.byteLength;
    // Backpressure: past 1 MiB buffered, wait until everything queued so far is written.
    if (device.ws.bufferedAmount > HIGH_WATER) await lastWrite;
    if (device.lastError) throw new Error(`upload failed: ${JSON.stringify(device.lastError)}`);
  }
  await lastWrite;
  const ack = await device.request("media.upload.end", { media_ref: ref, sha256 });
  if (ack.type !== "media.upload.ack" || ack.payload?.ok !== true)
    throw new Error(`upload not acknowledged: ${JSON.stringify(ack)}`);
  return performance.now() - t0;
}

export async function pull(device: Device, size: number, ref: string, sha256: string): Promise<number> {
  const hash = createHash("sha256");
  let received = 0;
  let failure: string | undefined;
  device.onBinary = (data) => {
    const chunk = decodeChunk(data);
    if (chunk.media !== ref || chunk.offset !== received)
      failure ??= `chunk ${chunk.media}@${chunk.offset}, expected ${ref}@${received}`;
    received += chunk.bytes.byteLength;
    hash.update(chunk.bytes);
  };
  const t0 = performance.now();
  const end = await device.request("media.pull", { media_id: ref });
  const ms = performance.now() - t0;
  device.onBinary = () => undefined;
  if (end.type !== "media.pull.end" || end.payload?.ok !== true) throw new Error(`pull failed: ${JSON.stringify(end)}`);
  if (failure) throw new Error(`pull out of order: ${failure}`);
  if (received !== size || hash.digest("hex") !== sha256)
    throw new Error(`pull returned ${received} bytes with another sha256`);
  return ms;
}
