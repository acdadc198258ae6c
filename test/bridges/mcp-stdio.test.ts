// `chat-gateway mcp` as an assistant runs it: the real binary spawned, driven over stdio by the MCP
// SDK's own client, against a real gateway (docs/PROTOCOL.md §20.2).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { exampleServerCommand } from "../fixtures/example-server-bundle.js";
import { mcpServerPerTest } from "./mcp-harness.js";
import { checkAsk, checkBadLanes, checkSendReadList, checkToolList } from "./mcp-tools.js";

const root = join(import.meta.dirname, "..", "..");
const start = mcpServerPerTest();
const BIN = exampleServerCommand(["mcp"])[1];

async function connectBridge(url: string, token: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...BIN, "--url", url],
    env: { ...(process.env as Record<string, string>), GATEWAY_TOKEN: token },
    cwd: root,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  const client = new Client({ name: "mcp-stdio-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

/** Runs the bridge to its end without blocking this process (the gateway it dials runs here). */
function runBridge(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...BIN, ...args], {
    cwd: root,
    env: { ...process.env, GATEWAY_URL: "", GATEWAY_TOKEN: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) =>
    child.once("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    }),
  );
}

describe("chat-gateway mcp over stdio", () => {
  test("the five tools, progress while an answer streams, and an ask answered", async () => {
    const server = await start();
    const { client, stderr } = await connectBridge(server.origin, "ann");
    await checkToolList(client);
    await checkSendReadList(client, server);
    await checkAsk(client);
    await checkBadLanes(client, server);
    await client.close();
    expect(stderr()).toBe("");
  }, 90_000);

  test("a wrong token is one line on stderr and a non-zero exit, stdout empty", async () => {
    const server = await start();
    const run = await runBridge(["--url", server.wsUrl, "--token", "mallory"]);
    expect(run.status).not.toBe(0);
    expect(run.stdout).toBe("");
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/^chat-gateway mcp: the gateway refused the token/);
  }, 60_000);

  test("a wrong URL is one line on stderr and a non-zero exit, no stack trace", async () => {
    const server = await start();
    const port = new URL(server.origin).port;
    await server.close();
    const run = await runBridge(["--url", `http://127.0.0.1:${port}`, "--token", "ann"]);
    expect(run.status).not.toBe(0);
    expect(run.stdout).toBe("");
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(/^chat-gateway mcp: cannot reach ws:\/\/127\.0\.0\.1/);
    expect((await runBridge(["--token", "ann"])).stderr).toMatch(/^chat-gateway mcp: no gateway URL/);
  }, 60_000);

  test("stdin closed: exit 0 with nothing on stdout; --help answers on stderr", async () => {
    const server = await start();
    const child = spawn(process.execPath, [...BIN, "--url", server.wsUrl, "--token", "ann"], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    // The device is connected once the gateway saw its hello; then stdin ends.
    await new Promise<void>((resolve) => server.gateway.on("connect", () => resolve()));
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(0);
    expect(out).toBe("");
    expect(err).toBe("");
    const help = await runBridge(["--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toBe("");
    expect(help.stderr).toContain("--token");
  }, 60_000);
});
