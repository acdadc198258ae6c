// The doors as the example server mounts them by default: a person signs in, gives the token to
// an OpenAI client, and the conversation is theirs on every device; nothing else gets in.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { Client } from "../gateway/harness.js";
import { request } from "../http/helpers.js";
import { runServerCli, startServerProcess } from "../example-server-process.js";

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
});

const chatBody = JSON.stringify({ model: "default", messages: [{ role: "user", content: "from a page" }] });

// A child process with bcrypt at cost 12 behind it: generous on a busy machine.
describe("example server doors", { timeout: 90_000 }, () => {
  it("login on: a session token is the key; none or a wrong one is 401", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-doors-"));
    const env = { GATEWAY_DATA_DIR: dataDir };
    const server = await startServerProcess(env);
    child = server.child;
    expect(runServerCli(["user", "add", "alice", "--no-adopt"], env, "correct horse\n").status).toBe(0);
    const login = await fetch(`${server.base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: "correct horse" }),
    });
    const { token } = (await login.json()) as { token: string };
    const phone = await Client.connect(server.ws, {}, { authorization: `Bearer ${token}` });
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: token, maxRetries: 0 });
    expect((await client.models.list()).data[0].id).toBe("default");
    const answer = await client.chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(answer.choices[0].message.content).toBe("You said: hello");
    const echo = await phone.waitFor((f) => f.type === "message" && f.payload.text === "hello");
    expect(echo.payload.role).toBe("user");
    const wrong = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "not-a-token", maxRetries: 0 });
    await expect(wrong.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const none = await request(server.base, { path: "/v1/models" });
    expect(none.status).toBe(401);
    expect(none.body.error.type).toBe("authentication_error");
    await phone.close();
  });

  it("login off: a foreign page's request is 403 and a rebinding Host 421, and nothing is sent", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-doors-"));
    const server = await startServerProcess({ GATEWAY_DATA_DIR: dataDir });
    child = server.child;
    const phone = await Client.connect(server.ws);
    const headers = { "content-type": "application/json" };
    const foreign = await request(server.base, {
      method: "POST",
      path: "/v1/chat/completions",
      headers: { ...headers, origin: "https://evil.example" },
      body: chatBody,
    });
    expect(foreign.status).toBe(403);
    const rebound = await request(server.base, {
      method: "POST",
      path: "/v1/chat/completions",
      headers: { ...headers, host: "evil.example" },
      body: chatBody,
    });
    expect(rebound.status).toBe(421);
    const own = await request(server.base, { method: "POST", path: "/v1/chat/completions", headers, body: chatBody });
    expect(own.status).toBe(200);
    expect(own.body.choices[0].message.content).toBe("You said: from a page");
    const history = await phone.request("history", { chat_id: "default", limit: 50 });
    const sent = phone.frames.filter((f) => f.type === "message" && f.payload.role === "user");
    expect(sent.map((f) => f.payload.text)).toEqual(["from a page"]);
    expect(history.type).toBe("history");
    await phone.close();
  });
});
