// The example server's push (docs/PROTOCOL.md §16): ntfy with --ntfy-url, FCM with
// --fcm-service-account, and Web Push whenever its package `web-push` is installed (an optional peer
// of chat-gateway: the start line says "Web Push off" without it), its VAPID key pair made once in
// <data-dir>/vapid.json (mode 0600; --vapid-file elsewhere), and --push-after-ms. Processes that
// share one database share the data folder already (media), so they share one key pair too. Also
// serves GET /api/push/vapid.
import { mkdir, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PushSender } from "chat-gateway";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import type { VapidKeys } from "chat-gateway/push/webpush";
import type { ServerConfig } from "./config.js";

/** Who runs this server, for push services (RFC 8292), unless --push-subject says. */
const DEFAULT_SUBJECT = "mailto:chat-gateway@example.invalid";

export interface ServerPush {
  /** The gateway's push options: the senders, and `pushAfterMs` when --push-after-ms set it. */
  options: { push: PushSender[]; pushAfterMs?: number; publicUrl?: string };
  /** Serves `GET /api/push/vapid` → `{public_key}`; false for any other path. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** What the start line says, e.g. "push webpush, ntfy". */
  label: string;
}

type WebPushEntry = typeof import("chat-gateway/push/webpush");

/** The Web Push entry, or undefined when its optional peer `web-push` is not installed. */
async function webPushEntry(): Promise<WebPushEntry | undefined> {
  try {
    return await import("chat-gateway/push/webpush");
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_CHAT_GATEWAY_MISSING_PEER") return undefined;
    throw error;
  }
}

async function vapidKeys(entry: WebPushEntry, config: ServerConfig): Promise<VapidKeys> {
  // In memory nothing outlives the process, the subscriptions included.
  if (config.memory && !config.vapidFile) return entry.generateVapidKeys();
  const file = config.vapidFile ?? `${config.dataDir}/vapid.json`;
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  return entry.fileVapidKeys(file);
}

/** What GET /api/push/vapid answers: the public key, or why this server has no Web Push. */
function vapidAnswer(vapid: VapidKeys | undefined): { status: number; body: string } {
  if (vapid) return { status: 200, body: JSON.stringify({ public_key: vapid.publicKey }) };
  return { status: 503, body: JSON.stringify({ error: "Web Push is off on this server: npm install web-push" }) };
}

async function fcmSender(file: string): Promise<PushSender> {
  // Imported only with --fcm-service-account, so its optional peer (jose) is needed only then.
  const { fcmPushSender } = await import("chat-gateway/push/fcm");
  return fcmPushSender({ serviceAccount: JSON.parse(await readFile(file, "utf8")) });
}

/** `counted` wraps the senders for --metrics-port (`chat_gateway_push_total`, docs/PROTOCOL.md §18.3). */
export async function serverPush(
  config: ServerConfig,
  counted: (senders: PushSender[]) => PushSender[] = (senders) => senders,
): Promise<ServerPush> {
  const entry = await webPushEntry();
  const vapid = entry && (await vapidKeys(entry, config));
  const made: PushSender[] = [];
  if (entry && vapid)
    made.push(entry.webPushSender({ vapid, subject: config.pushSubject ?? DEFAULT_SUBJECT, ...config.webPush }));
  if (config.ntfyUrl) made.push(ntfyPushSender({ baseUrl: config.ntfyUrl }));
  if (config.fcmServiceAccount) made.push(await fcmSender(config.fcmServiceAccount));
  const senders = counted(made);
  const answer = vapidAnswer(vapid);
  const off = entry ? "" : " (Web Push off: npm install web-push)";
  return {
    options: {
      push: senders,
      ...(config.pushAfterMs !== undefined ? { pushAfterMs: config.pushAfterMs } : {}),
      ...(config.publicUrl !== undefined ? { publicUrl: config.publicUrl } : {}),
    },
    label: `push ${senders.map((s) => s.name).join(", ") || "none"}${off}`,
    handle(req, res) {
      if (new URL(req.url ?? "/", "http://x").pathname !== "/api/push/vapid") return false;
      req.resume();
      if (req.method !== "GET" && req.method !== "HEAD") {
        res
          .writeHead(405, { allow: "GET, HEAD", "content-type": "application/json" })
          .end(JSON.stringify({ error: "use GET" }));
        return true;
      }
      res
        .writeHead(answer.status, { "content-type": "application/json", "cache-control": "no-store" })
        .end(req.method === "HEAD" ? undefined : answer.body);
      return true;
    },
  };
}
