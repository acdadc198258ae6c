/**
 * A push service that attacks its caller, on 127.0.0.1 over HTTP or HTTPS, written on raw sockets
 * so that it can break HTTP as a hostile endpoint would. The first path segment says how it
 * answers: `endless` a 503 whose body never ends, `drip` a status line whose headers never end (a
 * byte a second), `ok` a plain 201, `token` an OAuth token (for FCM).
 * @module
 */
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import { Agent } from "node:https";
import { selfSignedCertificate } from "../fixtures/certificate.js";

export interface HostilePushService {
  /** `http(s)://127.0.0.1:<port>` */
  readonly url: string;
  /** An agent that trusts the HTTPS service's certificate. */
  readonly agent: Agent;
  /** Paths asked for, in order. */
  readonly paths: string[];
  /** Connections the caller closed while this service was still answering `endless` or `drip`. */
  readonly cutOff: string[];
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, "x");

function answer(socket: Socket, path: string, cutOff: string[]): void {
  // Digits after the mode tell targets of one mode apart (ntfy topics `drip2`, `ok2`).
  const mode = path.split("/")[1].replace(/\d+$/, "");
  if (mode === "ok") {
    socket.end("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  } else if (mode === "token") {
    const body = JSON.stringify({ access_token: "access-1", expires_in: 3600 });
    socket.end(
      `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
  } else if (mode === "endless") {
    socket.write("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n");
    const pour = () => {
      while (!socket.destroyed && socket.write(CHUNK));
    };
    socket.on("drain", pour);
    socket.once("close", () => cutOff.push(path));
    pour();
  } else {
    socket.write("HTTP/1.1 201 Created\r\nX-Drip: ");
    const drip = setInterval(() => socket.write("x"), 1000);
    socket.once("close", () => {
      clearInterval(drip);
      cutOff.push(path);
    });
  }
}

export async function hostilePushService(protocol: "http" | "https"): Promise<HostilePushService> {
  const { key, cert } = selfSignedCertificate();
  const paths: string[] = [];
  const cutOff: string[] = [];
  const sockets = new Set<Socket>();
  const onSocket = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    let head = "";
    const onData = (data: Buffer) => {
      head += data.toString("latin1");
      const line = /^[A-Z]+ (\S+) HTTP\/1\.1\r\n/.exec(head);
      if (!line) return;
      socket.off("data", onData);
      // The request's body is not read: the answer does not depend on it.
      socket.resume();
      paths.push(line[1]);
      answer(socket, line[1], cutOff);
    };
    socket.on("data", onData);
  };
  const server: Server = protocol === "https" ? createTlsServer({ key, cert }, onSocket) : createNetServer(onSocket);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const agent = new Agent({ ca: cert });
  return {
    url: `${protocol}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    agent,
    paths,
    cutOff,
    close: () => {
      agent.destroy();
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
