// The typed client against a hostile gateway on 127.0.0.1 (a real ws server that answers hello
// like the real one, then misbehaves): a malformed frame is dropped with a `frame.invalid` event
// instead of throwing out of the socket's handler, and a download takes no more bytes than offered.
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { encodeChunk } from "chat-gateway/protocol";
import { createGatewayClient, isClientError, type ClientError, type GatewayClient } from "chat-gateway/client";
import { Client, startGateway } from "../gateway/harness.js";

type Frame = { type: string; id?: string; payload: Record<string, unknown> };

let wss: WebSocketServer | undefined;
let client: GatewayClient | undefined;
afterEach(async () => {
  client?.close();
  await new Promise((resolve) => (wss ? wss.close(resolve) : resolve(undefined)));
  wss = client = undefined;
});

/** A real gateway's hello.ok, so the fake's handshake is exactly right. */
async function realHelloOk(): Promise<Record<string, unknown>> {
  const h = await startGateway();
  const c = await Client.connect(h.url);
  const hello = c.frames[0]!.payload;
  c.ws.terminate();
  await h.close();
  return hello;
}

/** A fake gateway: hello and sync answered properly, every other frame handed to `on`; the client connected to it. */
async function hostile(on: (ws: WebSocket, frame: Frame) => void, afterSync: (ws: WebSocket) => void = () => {}) {
  const hello = await realHelloOk();
  wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise((resolve) => wss!.once("listening", resolve));
  wss.on("connection", (ws) => {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Frame;
      if (frame.type === "hello") ws.send(JSON.stringify({ type: "hello.ok", id: frame.id, payload: hello }));
      else if (frame.type === "sync") {
        ws.send(JSON.stringify({ type: "sync.done", id: frame.id, payload: { cursor: 0 } }));
        afterSync(ws);
      } else on(ws, frame);
    });
  });
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/ws/gateway`;
  client = createGatewayClient({ url, deviceId: "d1", reconnect: false, pingIntervalMs: 0 });
  await client.connect();
  await client.ready();
  return client;
}

const lane = { chat_id: "default", thread_id: null };

describe("client against a hostile gateway", () => {
  it("hostile gateway - malformed frames are dropped with a frame.invalid event; the client and its host go on", async () => {
    const invalid: ClientError[] = [];
    const typing: unknown[] = [];
    let sendBad!: () => void;
    const ready = hostile(
      () => {},
      (ws) => {
        sendBad = () => {
          for (const bad of [
            '{"type":"message.update","payload":null}',
            '{"type":"message.stop","payload":{"message_id":5}}',
            '{"type":"message"}',
            "[1,2",
            '{"type":"picker.approval","payload":{"picker_id":"p"}}',
          ])
            ws.send(bad);
          ws.send(JSON.stringify({ type: "some.future.frame", payload: {} }));
          ws.send(JSON.stringify({ type: "typing", payload: { ...lane, on: true } }));
        };
      },
    );
    const c = await ready;
    c.on("frame.invalid", (error) => invalid.push(error));
    c.on("typing", (p) => typing.push(p));
    sendBad();
    await expect.poll(() => typing.length).toBe(1);
    expect(invalid.map((e) => [e.code, e.message])).toEqual([
      ["unsupported", 'dropped a malformed gateway frame: message.update: field "payload": expected an object'],
      [
        "unsupported",
        expect.stringMatching(/^dropped a malformed gateway frame: message.stop: field "payload\.message_id": /),
      ],
      ["unsupported", 'dropped a malformed gateway frame: message: field "payload": expected an object'],
      ["unsupported", "dropped a malformed gateway frame: a gateway frame is not JSON"],
      ["unsupported", expect.stringMatching(/^dropped a malformed gateway frame: picker\.approval: field "payload\./)],
    ]);
    expect(c.openAsks()).toEqual([]);
    expect(c.state).toBe("open");
  });

  it("hostile gateway - a download takes no more bytes than offered, in order, and checks the digest", async () => {
    const good = Buffer.from("hello media");
    const sends: Record<string, (ws: WebSocket, id: string) => void> = {
      // Offered as 11 bytes, then 1 MiB more sent.
      flood: (ws, id) => {
        for (let i = 0; i < 5; i++) ws.send(encodeChunk("flood", i * 262_144, Buffer.alloc(262_144)));
        ws.send(JSON.stringify({ type: "media.pull.end", id, payload: { ok: true, media_id: "flood" } }));
      },
      gap: (ws, id) => {
        ws.send(encodeChunk("gap", 0, good.subarray(0, 4)));
        ws.send(encodeChunk("gap", 1_000_000, good.subarray(4)));
        ws.send(JSON.stringify({ type: "media.pull.end", id, payload: { ok: true, media_id: "gap" } }));
      },
      short: (ws, id) => {
        ws.send(encodeChunk("short", 0, good.subarray(0, 4)));
        ws.send(JSON.stringify({ type: "media.pull.end", id, payload: { ok: true, media_id: "short" } }));
      },
      good: (ws, id) => {
        ws.send(encodeChunk("good", 0, good.subarray(0, 5)));
        ws.send(encodeChunk("good", 5, good.subarray(5)));
        ws.send(JSON.stringify({ type: "media.pull.end", id, payload: { ok: true, media_id: "good" } }));
      },
    };
    const c = await hostile(
      (ws, frame) => frame.type === "media.pull" && sends[frame.payload.media_id as string]!(ws, frame.id!),
      (ws) => {
        const offer = {
          kind: "document",
          mime: "text/plain",
          size: good.length,
          filename: "f.txt",
          message_id: "m1",
          ...lane,
        };
        for (const media_id of Object.keys(sends))
          ws.send(JSON.stringify({ type: "media.offer", payload: { ...offer, media_id } }));
      },
    );
    await expect.poll(() => c.state).toBe("open");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const failure = async (id: string, options = {}) => {
      const error = await c.download(id, options).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect([id, isClientError(error, "download_failed") ? "download_failed" : String(error)]).toEqual([
        id,
        "download_failed",
      ]);
      return (error as Error).message;
    };
    expect(await failure("flood")).toBe("download of media flood failed: more than the 11 bytes it may have arrived");
    expect(await failure("gap")).toBe("download of media gap failed: a chunk at offset 1000000 came where 4 was next");
    expect(await failure("short")).toBe("download of media short failed: 4 bytes arrived of the 11 offered");
    const digest = createHash("sha256").update(good).digest("hex");
    expect(await failure("good", { sha256: "0".repeat(64) })).toBe(
      `download of media good failed: its sha256 is ${digest}, not ${"0".repeat(64)}`,
    );
    const ok = await c.download("good", { sha256: digest });
    expect([Buffer.from(ok.bytes).toString(), ok.sha256]).toEqual(["hello media", digest]);
  });
});
