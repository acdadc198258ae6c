// GET /api/ready (docs/PROTOCOL.md §18): whether this process should get traffic. Public like
// /api/ping, and answered before the login gate so that a load balancer probing by address (no
// allowed Host) gets it; it says only ok or not, never why.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Storage } from "chat-gateway/storage";
import { canonicalPath } from "chat-gateway/login";

/** What readiness looks at. */
export interface ReadyChecks {
  storage: Storage;
  /** False while the Redis connection is down (absent without Redis). */
  busConnected?: () => boolean;
  /** True once the server drains: it takes no new work, so the balancer should send none. */
  draining: () => boolean;
}

/** How long the storage may take to answer before the process counts as not ready. */
const STORAGE_WAIT_MS = 2_000;

/** Answers `GET /api/ready` and resolves true; resolves false for any other request. */
export async function serveReady(checks: ReadyChecks, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  if (canonicalPath(req.url) !== "/api/ready") return false;
  if (req.method !== "GET" && req.method !== "HEAD") {
    res
      .writeHead(405, { "content-type": "application/json", allow: "GET, HEAD" })
      .end(JSON.stringify({ error: `method ${req.method} not allowed; use GET or HEAD` }));
    return true;
  }
  const ok = !checks.draining() && (checks.busConnected?.() ?? true) && (await storageAnswers(checks.storage));
  res
    .writeHead(ok ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" })
    .end(JSON.stringify({ ok }));
  return true;
}

/**
 * A round trip to the database itself (`ping`, past any cache of the storage), bounded in time: a
 * database that hangs is as bad as one that fails.
 */
async function storageAnswers(storage: Storage): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), STORAGE_WAIT_MS)));
  try {
    return await Promise.race([
      storage.ping().then(
        () => true,
        () => false,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
