// The ACP bridge against the example server as a person runs it: login on, a paired device's token
// in GATEWAY_TOKEN, the upgrade's HTTP gate checking it (docs/PROTOCOL.md §9.2, §20.1).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runServerCli, startServerProcess } from "../example-server-process.js";
import { initialize, perTest, textOf } from "./acp-harness.js";

const setup = perTest();
let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
});

async function post(url: string, body: unknown, token?: string): Promise<Record<string, string>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, string>;
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

// A child process with bcrypt at cost 12 behind it: generous on a busy machine.
describe("chat-gateway acp against the example server", { timeout: 120_000 }, () => {
  it("a paired device's token gets in and the conversation is the account's; a wrong one is one line", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-acp-"));
    const env = { GATEWAY_DATA_DIR: dataDir };
    const server = await startServerProcess(env);
    child = server.child;
    expect(runServerCli(["user", "add", "alice", "--no-adopt"], env, "correct horse\n").status).toBe(0);
    const { token: session } = await post(`${server.base}/api/auth/login`, {
      username: "alice",
      password: "correct horse",
    });
    const { code } = await post(`${server.base}/api/devices/pair`, { name: "editor" }, session);
    const { token } = await post(`${server.base}/api/devices/redeem`, { code, confirm: true, device_name: "editor" });
    const bridge = setup.bridgeWith(["--url", server.base], { GATEWAY_TOKEN: token, GATEWAY_URL: "" });
    await initialize(bridge);
    const { sessionId } = await bridge.connection.agent.request("session/new", { cwd: "/work/site", mcpServers: [] });
    const result = await bridge.connection.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "hello" }],
    });
    expect(result.stopReason).toBe("end_turn");
    expect(textOf(bridge.updates, "agent_message_chunk")).toBe("You said: hello");
    const wrong = setup.bridgeWith(["--url", server.ws], { GATEWAY_TOKEN: "not-a-token" });
    expect(await wrong.exited).toBe(1);
    expect(wrong.stderr()).toMatch(/^chat-gateway acp: the gateway at .* refused the token\n$/);
    expect(wrong.stdout()).toBe("");
  });
});
