// The ACP bridge as a process an editor starts (docs/PROTOCOL.md §20): one line and a non-zero exit
// for a wrong token or URL, exit 0 when stdin closes, nothing but JSON-RPC on stdout, and a dropped
// connection redialed with sync without sending anything twice.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import type { RuntimeEvent, TurnInput } from "chat-gateway";
import { pausableLink } from "../fixtures/pausable-link.js";
import { blocks } from "../fixtures/readme-blocks.js";
import { Client } from "../gateway/harness.js";
import { gate, scriptedRuntime } from "../gateway/runtimes.js";
import { acpCommand, eventually, initialize, perTest, textOf } from "./acp-harness.js";

const setup = perTest();
const root = join(import.meta.dirname, "..", "..");

/** Runs the bridge to its end with stdin left open; resolves its exit code and output. */
function runToExit(args: string[], env: Record<string, string> = {}) {
  const child = spawn(...acpCommand(args), {
    cwd: root,
    env: { ...process.env, GATEWAY_URL: "", GATEWAY_TOKEN: "", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("close", (code) => resolve({ code, stdout, stderr })),
  );
}

/** A port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function expectOneLine(result: { code: number | null; stdout: string; stderr: string }, pattern: RegExp) {
  expect(result.code).not.toBe(0);
  expect(result.stdout).toBe("");
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

const echoRuntime = () =>
  scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
    yield { type: "text", delta: `echo: ${input.message.text}` };
  });

describe("chat-gateway acp as a process", () => {
  test("a wrong token, a wrong URL or none: one line on stderr and a non-zero exit", async () => {
    const server = await setup.gateway(echoRuntime());
    expectOneLine(
      await runToExit(["--url", server.wsUrl, "--token", "wrong"]),
      /^chat-gateway acp: .*refused the token/,
    );
    expectOneLine(
      await runToExit(["--url", `ws://127.0.0.1:${await closedPort()}/ws/gateway`], { GATEWAY_TOKEN: "ann-token" }),
      /cannot reach the gateway/,
    );
    expectOneLine(await runToExit([]), /--url or GATEWAY_URL/);
    expectOneLine(await runToExit(["--url", "ftp://example.com"]), /not a ws:\/\/ or http:\/\/ URL/);
    expectOneLine(
      await runToExit(["--url", server.wsUrl, "--token", "ann-token", "--channel", "nope"]),
      /no channel named "nope"/,
    );
    const help = await runToExit(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: chat-gateway acp/);
  });

  test("stdin closing ends it with 0, and stdout held JSON-RPC only", async () => {
    const server = await setup.gateway(echoRuntime());
    const bridge = setup.bridge(server.wsUrl);
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
    await bridge.connection.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] });
    bridge.child.stdin!.end();
    expect(await bridge.exited).toBe(0);
    const lines = bridge.stdout().trimEnd().split("\n");
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: "2.0" });
  });

  test("a dropped connection is redialed with sync: the answer completes, nothing is sent twice", async () => {
    const release = gate();
    const server = await setup.gateway(
      scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
        if (input.message.text !== "slow") return void (yield { type: "text", delta: `echo: ${input.message.text}` });
        yield { type: "text", delta: "working" };
        await release.wait;
        yield { type: "text", delta: " done" };
      }),
    );
    const port = Number(new URL(server.wsUrl).port);
    const link = await pausableLink({ host: "127.0.0.1", port });
    try {
      const bridge = setup.bridge(`ws://127.0.0.1:${link.port}/ws/gateway`);
      await initialize(bridge);
      const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
      const [chat_id, thread_id] = sessionId.split("/");
      // The send goes into a silent network; the reset after it makes the bridge send it again.
      link.pause();
      const first = bridge.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "once" }],
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      link.resume();
      expect((await first).stopReason).toBe("end_turn");
      // The answer ends while the bridge is cut off: the sync after the redial brings its end.
      const before = bridge.updates.length;
      const second = bridge.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "slow" }],
      });
      await eventually(() => textOf(bridge.updates.slice(before), "agent_message_chunk") === "working");
      link.pause();
      release.release();
      await new Promise((resolve) => setTimeout(resolve, 300));
      link.resume();
      expect((await second).stopReason).toBe("end_turn");
      expect(textOf(bridge.updates.slice(before), "agent_message_chunk")).toBe("working done");
      const phone = await Client.connect(server.wsUrl, { token: "ann-token" });
      const history = await phone.request("history", { chat_id, thread_id });
      expect(history.payload.messages.map((m: { text: string }) => m.text)).toEqual([
        "once",
        "echo: once",
        "slow",
        "working done",
      ]);
      await phone.close();
    } finally {
      await link.close();
    }
  });

  test("the README's Zed and JetBrains entries run as written", async () => {
    const server = await setup.gateway(echoRuntime());
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const entries = blocks(readme, "Use it from your editor", "json").map(
      (block) => (JSON.parse(block) as { agent_servers: Record<string, AgentServer> }).agent_servers["chat-gateway"]!,
    );
    expect(entries).toHaveLength(2);
    for (const entry of entries) {
      // `command` is the package's binary, whose `acp` is examples/server/main.ts acp.
      expect(entry.command).toBe("chat-gateway");
      expect(entry.args[0]).toBe("acp");
      expect(Object.keys(entry.env).sort()).toEqual(["GATEWAY_TOKEN", "GATEWAY_URL"]);
      const bridge = setup.bridgeWith(entry.args.slice(1), { GATEWAY_URL: server.wsUrl, GATEWAY_TOKEN: "ann-token" });
      await initialize(bridge);
      const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/tmp", mcpServers: [] });
      const result = await bridge.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "hi" }],
      });
      expect(result.stopReason).toBe("end_turn");
      expect(textOf(bridge.updates, "agent_message_chunk")).toBe("echo: hi");
    }
  });
});

interface AgentServer {
  command: string;
  args: string[];
  env: Record<string, string>;
}
