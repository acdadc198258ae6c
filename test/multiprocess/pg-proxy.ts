// A TCP proxy in front of the machine's PostgreSQL that a test can cut and restore, so an outage
// of the database is a test step with no root and no second server: cut, every connection through
// it is reset (as a database stopped with fast shutdown drops them) and new ones are refused until
// it is restored.
import { connect, createServer, type Socket } from "node:net";

export interface PgProxy {
  /** The DATABASE_URL that goes through the proxy. */
  readonly url: string;
  /** Reset every open connection and refuse new ones. */
  cut(): void;
  /** Accept connections again. */
  restore(): void;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port in front of `target` (a postgres:// URL). */
export async function startPgProxy(target: string): Promise<PgProxy> {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) return void client.resetAndDestroy();
    const upstream = connect(Number(to.port || 5432), to.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  const cut = () => {
    down = true;
    for (const s of sockets) s.resetAndDestroy();
  };
  return {
    url: url.toString(),
    cut,
    restore() {
      down = false;
    },
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
