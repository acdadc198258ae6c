import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createGateway, type Gateway } from "chat-gateway";
import { PassThrough, Readable } from "node:stream";
import { createLoginProtection, type LoginProtection, type LoginProtectionOptions } from "chat-gateway/login";
import { runUserCli, type UserCliIO } from "chat-gateway/cli";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { attachWebSocket, type WebSocketTransport } from "chat-gateway/ws";
import { afterEach, beforeEach } from "vitest";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";

/**
 * Real bcrypt hashes made once with bcryptjs, at cost 4 (the least bcrypt allows), so a login in a
 * test costs about a millisecond instead of 350 ms: the login path verifies any cost alike, and
 * what depends on cost 12 (hashPassword, the unknown-user comparison) is tested with
 * {@link COST12_HASHES}.
 */
export const HASHES = {
  "alice-password": "$2b$04$g8WMIGUjnQ3RqV8416QGNeYn3AEgbiv04VLBlzWg6ThZOGEsIEynC",
  "bob-password": "$2b$04$6eJVL2UjfGW0DpFqejVxb.4wmMJCCG/6xgIKlaz.zFV9MPMy1F4tO",
  /** "x" repeated 72 times. */
  x72: "$2b$04$STPe9/ghiwLHCMU1pOvHF.B61QwKT8FeBWglQ0.l1d3jT3pNxL02e",
} as const;

/** The same passwords at cost 12, as `hashPassword` makes them, for what compares against that cost. */
export const COST12_HASHES = {
  "alice-password": "$2b$12$a3u2fHLOI8zjKd9k.LU6JOxAV4EsUuhOwBxnos29aOIcHMN6TRpF.",
  "bob-password": "$2b$12$uyL2CllZ3IRDyGEOK7b/vubHDg7T97653FhSz8SRDCV0UOtRyXMVK",
  /** "x" repeated 72 times. */
  x72: "$2b$12$zwnoXwx9wBk4pPWEqxpysuvJ0cgcClgbYxDPCsJAMjcaDwy4JAQHy",
} as const;

/** Hashes made by other bcrypt implementations (published test vectors). */
export const FOREIGN_HASHES = [
  {
    impl: "OpenBSD/Openwall $2a$",
    password: "U*U",
    hash: "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
  },
  {
    impl: "pyca/bcrypt $2b$",
    password: "Kk4DQuMMfZL9o",
    hash: "$2b$04$cVWp4XaNU8a4v1uMRum2SO026BWLIoQMD/TXg5uZV.0P.uO8m3YEm",
  },
  {
    impl: "PHP password_hash $2y$",
    password: "rasmuslerdorf",
    hash: "$2y$10$.vGA1O9wmRjrwAVXD98HNOgsNpDczlqm3Jq7KnEd1rVAGv3Fykk1a",
  },
];

const quietLogger = { info() {}, warn() {}, error() {} };

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), "cg-http-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export async function writeUsers(file: string, users: Record<string, unknown>): Promise<void> {
  await writeFile(file, JSON.stringify({ users }), { mode: 0o600 });
}

export interface TestServer {
  url: string;
  port: number;
  server: http.Server;
  protection: LoginProtection;
  /** What the application route saw as `userOf(req)`. */
  seen: Array<string | null>;
  close(): Promise<void>;
}

/** A real node:http server on 127.0.0.1 with the protection mounted as documented; app routes answer 200 `{app, user}`. */
export async function startServer(
  options: LoginProtectionOptions,
  extra?: (server: http.Server, protection: LoginProtection) => void,
): Promise<TestServer> {
  // Quiet unless the test listens (through logger or the deprecated log).
  const protection = createLoginProtection({ logger: options.log ? undefined : quietLogger, ...options });
  const seen: Array<string | null> = [];
  const server = http.createServer(async (req, res) => {
    if (await protection.handle(req, res)) return;
    const user = protection.userOf(req);
    seen.push(user);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ app: req.url, user }));
  });
  extra?.(server, protection);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    protection,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await protection.close();
    },
  };
}

/** A users file in a fresh temp dir for each test, and the servers the test starts on it. */
export interface UsersFilePerTest {
  /** This test's users file (it does not exist until the test writes it). */
  readonly file: string;
  /** Starts a server as `startServer` does; it is closed after the test. */
  start: typeof startServer;
}

/** For a file whose tests each start login-protected servers on their own users file. */
export function usersFilePerTest(): UsersFilePerTest {
  const servers: TestServer[] = [];
  let cleanup: () => Promise<void> = async () => {};
  let file = "";
  beforeEach(async () => {
    const temp = await tempDir();
    cleanup = temp.cleanup;
    file = path.join(temp.dir, "users.json");
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
    await cleanup();
  });
  return {
    get file() {
      return file;
    },
    async start(options, extra) {
      const server = await startServer(options, extra);
      servers.push(server);
      return server;
    },
  };
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  text: string;
}

/** One HTTP request with node:http (fetch would hide Set-Cookie handling and raw paths). */
export function request(
  url: string,
  init: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    /** The loopback address to send from (127.0.0.2 is another client than 127.0.0.1). */
    localAddress?: string;
  } = {},
): Promise<Reply> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: init.method ?? "GET",
        path: init.path ?? "/",
        headers: init.headers,
        agent: false,
        ...(init.localAddress ? { localAddress: init.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: any;
          try {
            body = text === "" ? undefined : JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, body, text });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

export function login(
  url: string,
  username: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return request(url, {
    method: "POST",
    path: "/api/auth/login",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ username, password }),
  });
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/**
 * Runs the user CLI in this process with real streams, as root unless `uid` says otherwise;
 * `input` is what standard input holds.
 */
export async function runUserCliHere(
  argv: string[],
  options: Partial<Omit<UserCliIO, "stdin" | "stdout" | "stderr">> & { input?: string } = {},
) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (c) => (out += c));
  stderr.on("data", (c) => (err += c));
  const { input, ...io } = options;
  const code = await runUserCli(argv, {
    isTTY: false,
    uid: 0,
    env: {},
    ...io,
    stdin: Readable.from([input ?? ""]),
    stdout,
    stderr,
  });
  return { code, out, err };
}

/**
 * Runs the user CLI (examples/server/user-cli.ts) as a child process on the users file `file`,
 * with the data folder next to it (the first `user add` opens it to adopt the anonymous chats).
 */
export function runUserCliProcess(
  file: string,
  args: string[],
  input: string | undefined,
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const root = path.resolve(import.meta.dirname, "../..");
    const child = spawn(...exampleServerCommand(args, "user-cli"), {
      cwd: root,
      env: { ...process.env, GATEWAY_USERS_FILE: file, GATEWAY_DATA_DIR: path.dirname(file), ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out, err }));
    child.stdin.end(input);
  });
}

const quiet = { info() {}, warn() {}, error: (m: string, d?: unknown) => console.error(m, d) };

export interface Stack {
  srv: TestServer;
  gateway: Gateway;
  ws: string;
  close(): Promise<void>;
}

/** The login protection, a gateway using its authenticator and the ws adapter gated by it, on one port. */
export async function startStack(options: LoginProtectionOptions): Promise<Stack> {
  let gateway!: Gateway;
  let transport!: WebSocketTransport;
  const srv = await startServer(options, (server, protection) => {
    gateway = createGateway({
      storage: memoryStorage(),
      runtime: demoRuntime({ delayMs: 0 }),
      authenticator: protection.authenticator(),
      logger: quiet,
    });
    transport = attachWebSocket(gateway, {
      server,
      path: "/ws/gateway",
      authorizeUpgrade: (req) => protection.authorizeUpgrade(req),
    });
  });
  await gateway.start();
  return {
    srv,
    gateway,
    ws: `ws://127.0.0.1:${srv.port}/ws/gateway`,
    async close() {
      await gateway.close();
      await transport.close();
      await srv.close();
    },
  };
}
