// Bad input at the doors gets OpenAI's error shape and loses nothing; another owner's data is
// unreachable; only the bearer is a credential.
import { describe, expect, test } from "vitest";
import OpenAI from "openai";
import { tokenAuthenticator } from "chat-gateway";
import { Client } from "../gateway/harness.js";
import { doorServerPerTest, type DoorServer } from "./door-harness.js";

const start = doorServerPerTest();

async function post(server: DoorServer, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.baseURL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

async function expectError(response: Response, status: number, type: string): Promise<void> {
  expect(response.status).toBe(status);
  const body = (await response.json()) as { error: { message: string; type: string; code: string | null } };
  expect(body.error.type).toBe(type);
  expect(typeof body.error.message).toBe("string");
}

/** What the owner's default channel holds after the bad requests: nothing. */
async function storedCount(server: DoorServer): Promise<number> {
  const device = await Client.connect(server.wsUrl);
  const list = await device.request("channel.list", {});
  const channels = list.payload.channels as Array<{ chat_id: string; kind: string }>;
  let count = 0;
  for (const c of channels) {
    const page = await device.request("history", { chat_id: c.chat_id, limit: 200 });
    count += page.payload.messages.length;
  }
  await device.close();
  return count + channels.filter((c) => c.kind === "thread").length;
}

describe("door errors", () => {
  test("malformed input is a 400, 413 or 415 in OpenAI's shape, and stores nothing", async () => {
    const server = await start({}, { maxBodyBytes: 4096 });
    const user = (content: unknown) => JSON.stringify({ model: "default", messages: [{ role: "user", content }] });
    await expectError(await post(server, "{not json"), 400, "invalid_request_error");
    await expectError(await post(server, JSON.stringify([])), 400, "invalid_request_error");
    await expectError(
      await post(server, JSON.stringify({ model: "default", messages: [] })),
      400,
      "invalid_request_error",
    );
    await expectError(
      await post(
        server,
        JSON.stringify({
          model: "default",
          messages: [
            { role: "user", content: "q" },
            { role: "assistant", content: "a" },
          ],
        }),
      ),
      400,
      "invalid_request_error",
    );
    await expectError(await post(server, user("   ")), 400, "invalid_request_error");
    await expectError(
      await post(server, user([{ type: "image_url", image_url: { url: "http://169.254.169.254/latest/meta-data" } }])),
      400,
      "invalid_request_error",
    );
    await expectError(
      await post(server, user([{ type: "input_audio", input_audio: {} }])),
      400,
      "invalid_request_error",
    );
    await expectError(
      await post(server, JSON.stringify({ model: "default", messages: [{ role: "wizard", content: "x" }] })),
      400,
      "invalid_request_error",
    );
    await expectError(await post(server, user("x".repeat(5000))), 413, "invalid_request_error");
    await expectError(
      await post(server, user("hello"), { "content-type": "text/plain" }),
      415,
      "invalid_request_error",
    );
    const wrongMethod = await fetch(`${server.baseURL}/chat/completions`);
    await expectError(wrongMethod, 405, "invalid_request_error");
    await expectError(await fetch(`${server.baseURL}/nothing-here`), 404, "not_found_error");
    expect(await storedCount(server)).toBe(0);
  });

  test("the openai client sees 400 and 404 as its own errors", async () => {
    const server = await start();
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: "k", maxRetries: 0 });
    await expect(
      client.chat.completions.create({ model: "no such channel", messages: [{ role: "user", content: "hi" }] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.chat.completions.create({ model: "default", messages: [{ role: "assistant", content: "hi" }] }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  test("a wrong key is 401; another owner's channel is 404, as an unknown one", async () => {
    const server = await start({ authenticator: tokenAuthenticator({ "key-ann": "ann", "key-bob": "bob" }) });
    const bad = new OpenAI({ baseURL: server.baseURL, apiKey: "key-eve", maxRetries: 0 });
    await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const none = await fetch(`${server.baseURL}/models`);
    expect(none.status).toBe(401);
    const bob = await Client.connect(server.wsUrl, { token: "key-bob" });
    const secret = await bob.request("channel.create", { name: "Secret", kind: "channel" });
    const bobDefault = { chat_id: secret.payload.chat_id as string };
    const ann = new OpenAI({ baseURL: server.baseURL, apiKey: "key-ann", maxRetries: 0 });
    for (const model of [bobDefault.chat_id, "Secret"])
      await expect(
        ann.chat.completions.create({ model, messages: [{ role: "user", content: "leak?" }] }),
      ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await ann.models.list()).data.map((m) => m.id)).not.toContain("Secret");
    const history = await bob.request("history", { chat_id: bobDefault.chat_id, limit: 50 });
    expect(history.payload.messages).toEqual([]);
    const mine = await ann.chat.completions.create({ model: "default", messages: [{ role: "user", content: "mine" }] });
    expect(mine.choices[0].message.content).toBe("You said: mine");
    expect(bob.frames.some((f) => f.type === "message" && f.payload.text === "mine")).toBe(false);
    await bob.close();
  });

  test("a cookie is no credential at a door", async () => {
    const server = await start({ authenticator: tokenAuthenticator({ "key-ann": "ann" }) });
    const response = await fetch(`${server.baseURL}/models`, { headers: { cookie: "session=key-ann" } });
    expect(response.status).toBe(401);
  });
});
