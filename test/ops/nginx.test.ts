// The reverse proxy recipe of docs/PROTOCOL.md §18.4, run for real: Debian's nginx with TLS (a
// self-signed certificate made here with openssl) in front of the example server started with
// --trust-proxy 1. Over https the login cookie is Secure (the proxy's X-Forwarded-Proto is
// believed), and the WebSocket upgrade passes through nginx to hello.ok. nginx comes from
// .ci/proxy-deps.sh; without it this test fails saying so, as the browser tests do without Chromium.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import https from "node:https";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { afterEach, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../example-server-process.js";
import { HASHES, writeUsers } from "../http/helpers.js";

const NGINX = "/usr/sbin/nginx";
const children: ChildProcess[] = [];
afterEach(() => {
  // SIGTERM: nginx's master then stops its workers (SIGKILL would leave them running).
  for (const c of children.splice(0)) c.kill("SIGTERM");
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** nginx in the foreground with the recipe's location block, TLS on `port`, in front of `upstream`. */
async function startNginx(dir: string, port: number, upstream: string): Promise<void> {
  const made = spawnSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
    ],
    { encoding: "utf8" },
  );
  expect(made.status, made.stderr).toBe(0);
  const temp = (name: string) => `${name}_temp_path ${join(dir, name)};`;
  writeFileSync(
    join(dir, "nginx.conf"),
    `daemon off; pid ${join(dir, "nginx.pid")}; error_log stderr warn;
events {}
http {
  access_log off; ${temp("client_body")} ${temp("proxy")} ${temp("fastcgi")} ${temp("uwsgi")} ${temp("scgi")}
  map $http_upgrade $connection_upgrade { default upgrade; "" close; }
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${join(dir, "cert.pem")}; ssl_certificate_key ${join(dir, "key.pem")};
    location / {
      proxy_pass ${upstream};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_read_timeout 1h;
    }
  }
}
`,
  );
  const child = spawn(NGINX, ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(child);
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) =>
      net
        .connect(port, "127.0.0.1")
        .once("connect", function (this: net.Socket) {
          this.destroy();
          resolve(true);
        })
        .once("error", () => resolve(false)),
    );
    if (up) return;
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nginx did not start: ${err}`);
}

function loginOverHttps(port: number): Promise<{ status: number; cookie: string[] }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/api/auth/login",
        method: "POST",
        rejectUnauthorized: false,
        headers: { "content-type": "application/json", host: "localhost" },
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, cookie: ([] as string[]).concat(res.headers["set-cookie"] ?? []) }),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ username: "alice", password: "alice-password" }));
  });
}

it("nginx - TLS in front with --trust-proxy 1: the login cookie is Secure and the WebSocket upgrade reaches hello.ok", async () => {
  expect(existsSync(NGINX), "nginx is not installed: run .ci/proxy-deps.sh (apt-get install nginx-light)").toBe(true);
  const dir = mkdtempSync(join(tmpdir(), "gw-nginx-"));
  await writeUsers(join(dir, "users.json"), { alice: HASHES["alice-password"] });
  const server: ServerProcess = await startServerProcess({
    GATEWAY_DATA_DIR: join(dir, "data"),
    GATEWAY_USERS_FILE: join(dir, "users.json"),
    GATEWAY_TRUST_PROXY: "1",
  });
  children.push(server.child);
  const port = await freePort();
  await startNginx(dir, port, server.base);

  const login = await loginOverHttps(port);
  expect(login.status).toBe(200);
  // Over TLS the cookie carries the __Host- prefix (docs/PROTOCOL.md §9.3), which requires Secure.
  const session = login.cookie.find((c) => c.startsWith("__Host-gateway_session="));
  expect(session).toMatch(/;\s*Secure/i);

  const ws = new WebSocket(`wss://127.0.0.1:${port}/ws/gateway`, {
    rejectUnauthorized: false,
    headers: { cookie: session!.split(";")[0]!, host: "localhost" },
  });
  const first = await new Promise<Record<string, unknown>>((resolve, reject) => {
    ws.once("open", () =>
      ws.send(
        JSON.stringify({
          type: "hello",
          id: "h",
          payload: { token: "", device_id: "behind-nginx", device_name: "test" },
        }),
      ),
    );
    ws.once("message", (data) => resolve(JSON.parse(String(data))));
    ws.once("error", reject);
  });
  expect(first.type).toBe("hello.ok");
  ws.close();
}, 60_000);
