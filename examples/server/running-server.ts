// The first `user add` while the server runs (docs/PROTOCOL.md §10.4): the server moves the
// anonymous chats through its own open storage, asked over its admin socket, since sql.js keeps
// the data folder to the one process that holds it.
import net from "node:net";
import type { AdoptedCounts } from "chat-gateway/storage";
import type { AdoptionServer } from "chat-gateway/cli";
import { adminSocketPath, type AdminRequest } from "./admin-socket.js";
import { askAdmin } from "./hook-cli.js";

/** The server running on `dataDir`, when its admin socket takes a connection (undefined otherwise). */
export async function runningServer(dataDir: string): Promise<AdoptionServer | undefined> {
  const path = adminSocketPath(dataDir);
  if (!(await answers(path))) return undefined;
  const ask = async (request: AdminRequest) => {
    const reply = await askAdmin(path, request);
    if (!reply.ok) throw new Error(reply.error ?? "the server refused");
    return reply.result;
  };
  return {
    plan: async (name) => (await ask({ kind: "adopt", action: "plan", name })) as string | null,
    adopt: async (name) => (await ask({ kind: "adopt", action: "run", name })) as AdoptedCounts | null,
  };
}

/**
 * Whether a server listens at `path`: no socket file, one left by a server that died, or one this
 * account may not open (another account's server) all mean the CLI works on the storage itself.
 */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
