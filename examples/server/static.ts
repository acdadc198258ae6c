// Serves the built web UI (examples/server/web/dist) with a fallback page when it is not built.
import { createReadStream, existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

// From source the build sits in ./web/dist; in the package's bin build it is copied to dist/web,
// beside the chunk the dispatcher loads this from (dist/server-main-*.js), or above dist/bin/.
const root =
  [new URL("./web/dist/", import.meta.url), new URL("./web/", import.meta.url), new URL("../web/", import.meta.url)]
    .map((url) => fileURLToPath(url))
    .find((dir) => existsSync(`${dir}index.html`)) ?? fileURLToPath(new URL("./web/dist/", import.meta.url));
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
  ".webmanifest": "application/manifest+json",
  ".map": "application/json",
};

// `connect-src 'self'` covers the page's own ws:// and wss:// origin (CSP 3); naming the schemes
// would let an injected script open a WebSocket to any host.
const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "content-security-policy":
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
};

// The service worker (docs/PROTOCOL.md §16) controls the whole origin, and a browser must see a new
// one at once: no HTTP cache between it and the file.
const SERVICE_WORKER_HEADERS = { "service-worker-allowed": "/", "cache-control": "no-cache" };

/** A URL path decoded, or undefined when its percent-escapes are malformed (`%zz`): a 404, not a 500. */
export function decodeOrUndefined(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

export async function serveWeb(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET, HEAD" }).end();
    return;
  }
  const pathname = decodeOrUndefined(new URL(req.url ?? "/", "http://x").pathname);
  const relative = pathname === undefined ? undefined : normalize(pathname === "/" ? "index.html" : pathname.slice(1));
  if (relative === undefined || relative.startsWith("..")) {
    res.writeHead(404).end();
    return;
  }
  let file = join(root, relative);
  let info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) {
    // Single-page app: unknown paths get the page itself.
    file = join(root, "index.html");
    info = await stat(file).catch(() => undefined);
  }
  if (!info?.isFile()) {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", ...SECURITY_HEADERS });
    res.end(
      `<!doctype html><title>chat-gateway</title><p>chat-gateway is running. The web UI is not built; connect a client to <code>/ws/gateway</code>.</p>`,
    );
    return;
  }
  res.writeHead(200, {
    "content-type": TYPES[extname(file)] ?? "application/octet-stream",
    "content-length": String(info.size),
    ...SECURITY_HEADERS,
    ...(relative === "sw.js" ? SERVICE_WORKER_HEADERS : {}),
  });
  if (req.method === "HEAD") return void res.end();
  createReadStream(file).pipe(res);
}
