import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ANONYMOUS_OWNER, type MediaStore, type Owner } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { isInlineMediaType, mediaTypeEssence, isGatewayError } from "chat-gateway/protocol";

/** Options of {@link createMediaHandler}. */
export interface MediaHandlerOptions {
  /** Where the media records are (who owns an id, its type, size and file name). */
  storage: Storage;
  /** Where the bytes are. */
  mediaStore: MediaStore;
  /**
   * The owner a request may read the media of, or null when nobody is signed in (the answer is
   * then 404). With `createLoginProtection` of `chat-gateway/login`: `(req) => protection.userOf(req)`.
   */
  ownerOf(req: IncomingMessage): Owner | null | undefined | Promise<Owner | null | undefined>;
  /** The route's path prefix; the media id is the one path segment after it. Default `"/api/media/"`. */
  prefix?: string;
  /** Receives unexpected failures (the client gets a bare 500). Default `console.error`. */
  onError?: (error: unknown) => void;
}

/** Answers a request when it is for the media route; resolves false for any other path. */
export type MediaHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** RFC 5987 attr-char: what `filename*` may hold without percent-encoding. */
const ATTR_CHAR = /^[A-Za-z0-9!#$&+.^_`|~-]$/;

/** Longest media id the route looks up, characters; a longer one is unknown (404). */
const MAX_ID_LENGTH = 1024;

/**
 * Serves an owner's media over HTTP: `GET` or `HEAD <prefix><media_id>` (docs/PROTOCOL.md §9.8).
 * Built so that uploaded bytes can never run as a page of the server's origin: every answer
 * carries `X-Content-Type-Options: nosniff` and `Content-Security-Policy: default-src 'none';
 * sandbox`, and only raster images, audio and video are `inline`; SVG, HTML, XML, PDF and every
 * other type are `attachment` (downloads). The file name is sent per RFC 6266 and RFC 5987. An
 * id that is malformed, unknown or another owner's answers 404 alike. Media of
 * {@link ANONYMOUS_OWNER} (login off: no credential guards them) carry
 * `Cross-Origin-Resource-Policy: same-origin`, and a request with `Sec-Fetch-Site: cross-site`
 * for them is answered 403, so other sites' pages can neither embed nor fetch them.
 *
 * @example
 * ```ts
 * const media = createMediaHandler({ storage, mediaStore, ownerOf: (req) => protection.userOf(req) });
 * http.createServer(async (req, res) => {
 *   if (await protection.handle(req, res)) return;
 *   if (await media(req, res)) return;
 *   // ...the application's other routes
 * });
 * ```
 */
export function createMediaHandler(options: MediaHandlerOptions): MediaHandler {
  if (!options || typeof options.ownerOf !== "function" || !options.storage || !options.mediaStore) {
    throw new TypeError("createMediaHandler: options.storage, options.mediaStore and options.ownerOf are required");
  }
  const prefix = options.prefix ?? "/api/media/";
  if (!prefix.startsWith("/") || !prefix.endsWith("/"))
    throw new TypeError(`createMediaHandler: prefix must start and end with "/", got ${JSON.stringify(prefix)}`);
  const onError = options.onError ?? ((error: unknown) => console.error(error));

  return async (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0];
    if (!path.startsWith(prefix)) return false;
    try {
      await answer(req, res, path.slice(prefix.length));
    } catch (error) {
      const missing = isGatewayError(error) && error.code === "not_found";
      if (!missing) onError(error);
      if (res.headersSent) res.destroy();
      else if (missing) json(res, 404, "not found");
      else json(res, 500, "internal error");
    }
    return true;
  };

  async function answer(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      return json(res, 405, "method not allowed");
    }
    const id = decodeId(raw);
    const owner = id === undefined ? undefined : await options.ownerOf(req);
    if (owner === ANONYMOUS_OWNER) {
      // No credential guards it (login is off): no other site's page may embed or fetch it.
      res.setHeader("cross-origin-resource-policy", "same-origin");
      if (req.headers["sec-fetch-site"] === "cross-site") return json(res, 403, "cross-site request refused");
    }
    const record = owner && id !== undefined ? await options.storage.getMedia(owner, id) : undefined;
    if (!owner || !record) return json(res, 404, "not found");
    // The first chunk is read before the status line, so a missing file is still a clean 404.
    const chunks = options.mediaStore.read(owner, record.media_id)[Symbol.asyncIterator]();
    const first = await chunks.next();
    const essence = mediaTypeEssence(record.mime);
    res.writeHead(200, {
      "content-type": essence ?? "application/octet-stream",
      "content-length": String(record.size),
      "content-disposition": contentDisposition(essence !== undefined && isInlineMediaType(essence), record.filename),
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; sandbox",
      "cache-control": "private, max-age=3600",
    });
    if (req.method === "HEAD") {
      await chunks.return?.();
      res.end();
      return;
    }
    async function* rest(): AsyncGenerator<Uint8Array> {
      if (!first.done) yield first.value;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
    }
    // A client that goes away mid-download ends the pipeline; there is nobody left to answer.
    await pipeline(Readable.from(rest()), res).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== "ERR_STREAM_PREMATURE_CLOSE") throw error;
    });
  }
}

/** The media id of a path segment, or undefined when it is empty, nested, malformed or too long. */
function decodeId(raw: string): string | undefined {
  if (raw === "" || raw.includes("/") || raw.length > MAX_ID_LENGTH * 3) return undefined;
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  return id.length > MAX_ID_LENGTH ? undefined : id;
}

/**
 * `inline` or `attachment` with an ASCII `filename` for old clients and the exact name as
 * `filename*` (RFC 6266, RFC 5987): nothing from the name can end the header or add a parameter.
 */
export function contentDisposition(inline: boolean, filename: string): string {
  const name = typeof filename === "string" && filename !== "" ? filename : "media";
  const ascii = name.replace(/[^\x20-\x7e]|["\\%/]/g, "_");
  // Byte by byte, so a lone surrogate becomes U+FFFD instead of throwing as encodeURIComponent would.
  let exact = "";
  for (const byte of Buffer.from(name, "utf8")) {
    const c = String.fromCharCode(byte);
    exact += ATTR_CHAR.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return `${inline ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

function json(res: ServerResponse, status: number, error: string): void {
  res
    .writeHead(status, { "content-type": "application/json", "x-content-type-options": "nosniff" })
    .end(JSON.stringify({ error }));
}
