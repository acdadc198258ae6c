// The web UI's Content-Security-Policy in Chromium: a page of the example server may open a
// WebSocket to its own origin only, so a script injected into it cannot reach another host.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { serveWeb } from "../../examples/server/static.js";
import { launchChromium, missingChromium } from "./browser.js";

let server: http.Server;
let browser: Browser | undefined;
let port: number;

beforeEach(() => {
  if (missingChromium) throw new Error(missingChromium);
});

beforeAll(async () => {
  server = http.createServer((req, res) => void serveWeb(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  if (!missingChromium) browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("web UI CSP", () => {
  it("csp - a WebSocket to the page's own origin is allowed; to another host, port or scheme it is refused", async () => {
    const page = await browser!.newPage();
    await page.goto(`http://127.0.0.1:${port}/`);
    const refused = await page.evaluate(async (own) => {
      const blocked: string[] = [];
      document.addEventListener("securitypolicyviolation", (e) => blocked.push(e.blockedURI));
      for (const url of [
        `ws://${own}/ws/gateway`,
        "ws://127.0.0.2:9/x",
        `ws://localhost:${own.split(":")[1]}/x`,
        "wss://evil.example/x",
      ]) {
        try {
          new WebSocket(url).close();
        } catch {
          blocked.push(url);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      return blocked.map((u) => u.replace(/\/x$/, ""));
    }, `127.0.0.1:${port}`);
    expect(new Set(refused)).toEqual(new Set(["ws://127.0.0.2:9", `ws://localhost:${port}`, "wss://evil.example"]));
    await page.close();
  }, 60_000);
});
