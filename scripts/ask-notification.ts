// The README's picture of an ask's notification (docs/PROTOCOL.md §21), made from the real Web
// Push payload: a gateway with the demo runtime and the Web Push sender posts an approval's push
// to a push service stand-in on https://127.0.0.1; the payload is decrypted as a browser would,
// shown through the web UI's own `notificationOf` (what its service worker passes to
// `showNotification`), drawn as a phone's notification in headless Chromium, and saved as
// docs/images/ask-notification.png. A headless browser cannot capture an operating system's
// notification, so this is a faithful stand-in: the text and buttons are the push's, the frame is not.
//
//   node --import tsx scripts/ask-notification.ts    (CHROMIUM_PATH, default /usr/bin/chromium)
import http from "node:http";
import { mkdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { chromium } from "playwright-core";
import WebSocket from "ws";
import { createGateway } from "chat-gateway";
import { generateVapidKeys, webPushSender } from "chat-gateway/push/webpush";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { memoryStorage } from "chat-gateway/storage/memory";
import { attachWebSocket } from "chat-gateway/ws";
import type { Shown } from "../examples/server/web/src/push-notification.js";
import { fakePushService, subscriber } from "../test/push/fake-push-service.js";

const root = join(import.meta.dirname, "..");
const out = join(root, "docs/images/ask-notification.png");
const PUBLIC_URL = "https://chat.example.com";

/** One device's socket: hello, then requests answered by id. */
async function device(url: string, hello: Record<string, unknown>) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  let n = 0;
  const request = (type: string, payload: unknown) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = `r${++n}`;
      const listen = (data: WebSocket.RawData) => {
        const frame = JSON.parse(String(data)) as Record<string, unknown>;
        if (frame.id !== id) return;
        ws.off("message", listen);
        resolve(frame);
      };
      ws.on("message", listen);
      ws.send(JSON.stringify({ type, id, payload }));
    });
  await request("hello", { token: "", device_name: "Pixel", ...hello });
  return { request, close: () => ws.close() };
}

/** The payload the gateway pushes for a demo approval, decrypted as the browser would. */
async function askPayload(): Promise<Record<string, unknown>> {
  const service = await fakePushService();
  const browser = subscriber(`${service.url}/push/phone`);
  const gateway = createGateway({
    storage: memoryStorage(),
    runtime: demoRuntime({ delayMs: 0 }),
    push: [
      webPushSender({
        vapid: generateVapidKeys(),
        subject: "mailto:ops@example.com",
        agent: service.agent,
        endpointAllowed: () => true,
      }),
    ],
    pushAfterMs: 0,
    publicUrl: PUBLIC_URL,
    // Quiet: closing ends the ask, and its clearing push then finds the stand-in gone.
    logger: { info() {}, warn() {}, error: console.error },
  });
  await gateway.start();
  const server = http.createServer();
  const transport = attachWebSocket(gateway, { server, path: "/ws/gateway" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/gateway`;
  try {
    const phone = await device(url, {
      device_id: "phone",
      caps: { push: "webpush" },
      webpush: browser.subscription,
    });
    phone.close();
    const laptop = await device(url, { device_id: "laptop", device_name: "Laptop", caps: { pickers: true } });
    await laptop.request("message.send", { chat_id: "default", text: "approve: deploy to production" });
    for (let i = 0; i < 500 && service.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    if (service.requests.length === 0) throw new Error("no push arrived");
    laptop.close();
    return JSON.parse(browser.decrypt(service.requests[0]!.body)) as Record<string, unknown>;
  } finally {
    await gateway.close();
    await transport.close();
    server.close();
    await service.close();
  }
}

const html = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);

/** A phone's lock screen with the notification as the service worker shows it. */
function page(shown: Shown): string {
  const icon = readFileSync(join(root, "examples/server/web/icon.svg"), "utf8");
  const buttons = (shown.options.actions ?? []).map((a) => `<button>${html(a.title)}</button>`).join("");
  return `<!doctype html><meta charset="utf-8"><style>
  body { margin: 0; font: 15px/1.35 system-ui, "DejaVu Sans", sans-serif; }
  .screen { width: 412px; height: 400px; padding: 28px 16px; box-sizing: border-box;
    background: linear-gradient(160deg, #1d2a44, #3a4f7a 60%, #6b7fa8); color: #fff; }
  .clock { text-align: center; font-size: 54px; font-weight: 300; letter-spacing: 1px; }
  .date { text-align: center; opacity: .85; margin-bottom: 26px; }
  .card { background: rgba(245, 246, 250, .97); color: #1b1f27; border-radius: 22px; padding: 14px 16px 10px; }
  .head { display: flex; align-items: center; gap: 8px; font-size: 12.5px; color: #5b6270; }
  .head svg { width: 18px; height: 18px; }
  .title { font-weight: 600; margin: 8px 0 2px; }
  .body { color: #333a46; white-space: pre-line; }
  .actions { display: flex; gap: 18px; margin-top: 10px; }
  .actions button { border: 0; background: none; color: #2f5fb3; font: 600 14px system-ui, sans-serif; padding: 6px 0; }
</style><div class="screen"><div class="clock">9:41</div><div class="date">Thursday, 3 December</div>
<div class="card"><div class="head">${icon}<span>chat-gateway · chat.example.com · now</span></div>
<div class="title">${html(shown.title)}</div><div class="body">${html(String(shown.options.body ?? ""))}</div>
<div class="actions">${buttons}</div></div></div>`;
}

const payload = await askPayload();
// The worker checks each button's URL against its own origin: here, the public URL's.
(globalThis as { location?: unknown }).location = new URL(PUBLIC_URL);
const { notificationOf } = await import("../examples/server/web/src/push-notification.js");
const shown = notificationOf(payload);
if (!shown.options.actions?.length) throw new Error(`the ask's push has no buttons: ${JSON.stringify(payload)}`);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium" });
try {
  const tab = await browser.newPage({ viewport: { width: 412, height: 400 }, deviceScaleFactor: 2 });
  await tab.setContent(page(shown));
  mkdirSync(join(root, "docs/images"), { recursive: true });
  await tab.locator(".screen").screenshot({ path: out });
} finally {
  await browser.close();
}
console.log(
  `${out}: "${shown.title}" / "${shown.options.body}" / ${shown.options.actions.map((a) => a.title).join(", ")}`,
);
