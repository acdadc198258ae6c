// A TCP relay on loopback that holds back what a client sends by a fixed time, in order: a slow
// network link to Redis, so a subscription takes that long to become active.
import net from "node:net";

export interface SlowLink {
  /** `redis://127.0.0.1:<port>` of the relay. */
  url: string;
  close(): Promise<void>;
}

/** Relays to `target` (host:port), delaying the client-to-server direction by `delayMs`. */
export async function slowLink(target: { host: string; port: number }, delayMs: number): Promise<SlowLink> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on("data", (chunk) => {
      // Each chunk leaves delayMs after it came; timers of equal delay fire in order.
      setTimeout(() => upstream.write(chunk), delayMs);
    });
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
