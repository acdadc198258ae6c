// The example server with login protection on and one user, alice, and one Chromium page on it
// that records what it sends and gets on the gateway socket: for the web UI's stories, whose steps
// share the page and run in order, like a person using the app.
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { createUserStore } from "chat-gateway/login";
import type { RunningServer } from "../../examples/server/server.js";
import { startExample, tempDir } from "../client/helpers.js";
import { HASHES } from "../http/helpers.js";
import { buildWebUi, launchChromium, missingChromium, watchProblems } from "./browser.js";

export type WireFrame = { type: string; payload: Record<string, any> };

/** The server and the page of one story; set before its first step. */
export interface AppSession {
  server: RunningServer;
  page: Page;
  /** Page errors and CSP refusals seen so far. */
  readonly problems: string[];
  /** The gateway socket's text frames, both ways. */
  readonly wire: { sent: WireFrame[]; received: WireFrame[] };
  /** Signs alice in on the sign-in screen and waits for the connection. */
  signIn(): Promise<void>;
  /** Types a message in the composer and sends it with Enter. */
  send(text: string): Promise<void>;
  /** Stops the server and starts it again on the same port and data, forgetting its sessions. */
  restart(): Promise<void>;
}

/** Starts the server and the page before the file's first test and stops them after its last. */
export function appSession(): AppSession {
  let dataDir: string;
  let cleanup: (() => Promise<void>) | undefined;
  let browser: Browser | undefined;
  const app = {
    problems: [] as string[],
    wire: { sent: [] as WireFrame[], received: [] as WireFrame[] },
    async signIn() {
      await app.page.locator("#signin-user").fill("alice");
      await app.page.locator("#signin-password").fill("alice-password");
      await app.page.getByRole("button", { name: "Sign in" }).click();
      await app.page.locator('.conn[data-state="open"]').waitFor({ timeout: 15_000 });
    },
    async send(text: string) {
      await app.page.getByRole("textbox", { name: "Message" }).fill(text);
      await app.page.getByRole("textbox", { name: "Message" }).press("Enter");
    },
    async restart() {
      const port = app.server.port;
      await app.server.close();
      app.server = await startExample(dataDir, port);
    },
  } as AppSession;

  // Every test fails (none is skipped) when the browser is missing.
  beforeEach(() => {
    if (missingChromium) throw new Error(missingChromium);
  });

  beforeAll(async () => {
    if (missingChromium) return;
    buildWebUi();
    const temp = await tempDir();
    dataDir = temp.dir;
    cleanup = temp.cleanup;
    await createUserStore(path.join(dataDir, "users.json")).add("alice", HASHES["alice-password"]);
    // A demo agent slow enough that a test can watch an answer stream in.
    process.env.GATEWAY_DEMO_DELAY_MS = "30";
    app.server = await startExample(dataDir);
    browser = await launchChromium();
    app.page = await newPage(browser, app.wire);
    watchProblems(app.page, app.problems);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await app.server?.close();
    await cleanup?.();
  });
  return app;
}

/** A page that records the connection indicator's texts in `window.__conn` and the socket's frames in `wire`. */
async function newPage(browser: Browser, wire: AppSession["wire"]): Promise<Page> {
  const context: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  // Every text the connection indicator shows (it can change faster than a poll).
  await context.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __conn: string[] }).__conn = seen;
    new MutationObserver(() => {
      const text = document.querySelector(".conn")?.textContent ?? "";
      if (text && seen.at(-1) !== text) seen.push(text);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  const page = await context.newPage();
  page.on("websocket", (socket) => {
    if (!socket.url().endsWith("/ws/gateway")) return;
    socket.on("framesent", (f) => typeof f.payload === "string" && wire.sent.push(JSON.parse(f.payload)));
    socket.on("framereceived", (f) => typeof f.payload === "string" && wire.received.push(JSON.parse(f.payload)));
  });
  return page;
}
