// The example server closes a socket whose request headers do not arrive within 10 s
// (docs/PROTOCOL.md §10.2) about then, not whenever Node's connection check comes round (every
// 30 s by default): a real child process and raw TCP sockets.
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "./example-server-process.js";

let server: ServerProcess | undefined;
const sockets: net.Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  server?.child.kill("SIGKILL");
  server = undefined;
});

/** A raw connection; `closed` resolves once the server has closed it. */
async function connect(url: string): Promise<{ socket: net.Socket; closed: Promise<void>; isOpen: () => boolean }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect({ host: hostname, port: Number(port) });
  sockets.push(socket);
  socket.on("error", () => undefined);
  socket.on("data", () => undefined);
  let open = true;
  const closed = new Promise<void>((resolve) =>
    socket.once("close", () => {
      open = false;
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return { socket, closed, isOpen: () => open };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("example server - HTTP timeouts", () => {
  it("timeouts - a socket that sends nothing, and one that trickles headers, are open at 5 s and closed soon after the 10 s header bound", async () => {
    server = await startServerProcess({ GATEWAY_DATA_DIR: join(mkdtempSync(join(tmpdir(), "gw-timeouts-")), "data") });
    const silent = await connect(server.base);
    const trickle = await connect(server.base);
    trickle.socket.write("GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const drip = setInterval(() => trickle.socket.write("X-Drip: 1\r\n"), 1_000);
    try {
      await sleep(5_000);
      expect(silent.isOpen()).toBe(true);
      expect(trickle.isOpen()).toBe(true);
      // 10 s, plus a 1 s check interval, plus room for a busy machine; Node's default 30 s check
      // closes them only about 30 s after the server started listening.
      const deadline = sleep(13_000).then(() => "still open");
      expect(await Promise.race([silent.closed.then(() => "closed"), deadline])).toBe("closed");
      expect(await Promise.race([trickle.closed.then(() => "closed"), deadline])).toBe("closed");
    } finally {
      clearInterval(drip);
    }
  }, 40_000);
});
