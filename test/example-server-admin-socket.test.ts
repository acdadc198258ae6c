// The example server's admin socket (docs/PROTOCOL.md §17.4) with real socket clients: a request
// line is at most 64 KiB and must arrive within 10 s; a client that sends nothing or sends without
// end gets one error line and is let go, while other clients are answered.
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "./example-server-process.js";

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

interface AdminClient {
  socket: net.Socket;
  /** True once the connection closed. */
  readonly closed: boolean;
  /** Everything the server sent, once the connection closed. */
  text: Promise<string>;
}

function adminClient(path: string): AdminClient {
  const socket = net.connect(path);
  let text = "";
  let closed = false;
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  // The server may close while the client still writes.
  socket.on("error", () => undefined);
  const done = new Promise<string>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve(text);
    }),
  );
  return {
    socket,
    get closed() {
      return closed;
    },
    text: done,
  };
}

/**
 * Writes 16 KiB pieces without a line feed until the server answers or closes, at most `most`
 * bytes; the bytes written.
 */
async function flood(client: AdminClient, most: number): Promise<number> {
  const piece = Buffer.alloc(16 * 1024, "a");
  let sent = 0;
  let answered = false;
  client.socket.once("data", () => (answered = true));
  while (!client.closed && !answered && sent < most) {
    sent += piece.length;
    if (!client.socket.write(piece))
      await Promise.race([new Promise((resolve) => client.socket.once("drain", resolve)), client.text]);
  }
  return sent;
}

const MiB = 1024 * 1024;

describe("example server - admin socket", () => {
  it("admin socket - a client that sends nothing or without end gets one error line and is let go; others are answered meanwhile", {
    timeout: 90_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-admin-"));
    server = await startServerProcess({ GATEWAY_DATA_DIR: dataDir });
    const path = join(dataDir, "admin.sock");
    const silent = adminClient(path);

    const endless = adminClient(path);
    const sent = await flood(endless, 64 * MiB);
    expect(await endless.text).toBe(
      '{"ok":false,"error":"the request line is longer than 65536 bytes; the connection is closed"}\n',
    );
    expect(sent).toBeLessThan(64 * MiB);

    // A line of exactly 64 KiB is taken.
    const asked = adminClient(path);
    const request = '{"action":"list","pad":""}';
    asked.socket.write(`${request.replace('""', `"${"p".repeat(64 * 1024 - request.length)}"`)}\n`);
    expect(JSON.parse(await asked.text)).toEqual({ ok: true, result: [] });

    // The silent client may already be gone on a busy machine; what it was told is what counts.
    expect(await silent.text).toBe('{"ok":false,"error":"no request line within 10 s; the connection is closed"}\n');
  });
});
