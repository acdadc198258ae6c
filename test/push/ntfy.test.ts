import { afterEach, describe, expect, it } from "vitest";
import { PushSendError, type Device, type PushMessage } from "chat-gateway";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { recordingServer, refusedUrl, type RecordingServer, type ScriptedResponse } from "./recording-server.js";

function device(extra: Partial<Device> = {}): Device {
  return {
    device_id: "phone-1",
    device_name: "Phone",
    caps: { min_protocol: 1, media: true, push: "ntfy", streaming: true },
    ntfy_topic: "alice-phone-x7Qp",
    last_seen: 0,
    ...extra,
  };
}

const reply: PushMessage = {
  kind: "message",
  title: "Assistant",
  body: "The build is green 🎉",
  chat_id: "c1",
  message_id: "m1",
};

/**
 * Go's mime.WordDecoder, as ntfy uses it: each encoded word decodes on its own (so a character
 * split across two words would come out broken), and whitespace between two words is dropped.
 */
function decodeRfc2047(value: string): string {
  return value
    .replace(/(\?=)\s+(?==\?)/g, "$1")
    .replace(/=\?UTF-8\?B\?([A-Za-z0-9+/=]*)\?=/gi, (_, b64: string) => Buffer.from(b64, "base64").toString("utf8"));
}

let server: RecordingServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function ntfy(answer: ScriptedResponse = { json: { id: "x1" } }): Promise<RecordingServer> {
  server = await recordingServer(() => answer);
  return server;
}

describe("ntfyPushSender", () => {
  it("accepts - only devices with an ntfy topic", () => {
    const push = ntfyPushSender();
    expect(push.name).toBe("ntfy");
    expect(push.accepts(device())).toBe(true);
    expect(push.accepts(device({ ntfy_topic: undefined }))).toBe(false);
    expect(push.accepts(device({ ntfy_topic: "", fcm_token: "t" }))).toBe(false);
  });

  it("send - posts the body as text to {baseUrl}/{topic} with title and default priority", async () => {
    const { url, requests } = await ntfy();
    await ntfyPushSender({ baseUrl: url }).send("alice", device(), reply);
    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request.method).toBe("POST");
    expect(request.url).toBe("/alice-phone-x7Qp");
    expect(request.body).toBe("The build is green 🎉");
    expect(request.headers.title).toBe("Assistant");
    expect(request.headers.priority).toBe("3");
    expect(request.headers).not.toHaveProperty("authorization");
    expect(request.headers).not.toHaveProperty("click");
    expect(request.headers).not.toHaveProperty("tags");
  });

  it("send - keeps a base URL's path prefix", async () => {
    const { url, requests } = await ntfy();
    await ntfyPushSender({ baseUrl: `${url}/ntfy/` }).send("alice", device({ ntfy_topic: "Alice_phone-7" }), reply);
    expect(requests[0].url).toBe("/ntfy/Alice_phone-7");
  });

  it.each(["..", "../x", "a/b", "%2e%2e", "a b", "x".repeat(65), "topic?x=1", "t\u00e9"])(
    "send - a stored topic outside the grammar (%s) is a permanent PushSendError and reaches no URL",
    async (topic) => {
      const { url, requests } = await ntfy();
      const push = ntfyPushSender({ baseUrl: `${url}/ntfy`, token: "tk_secret" });
      const error = await push.send("alice", device({ ntfy_topic: topic }), reply).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PushSendError);
      expect((error as PushSendError).permanent).toBe(true);
      expect((error as Error).message).toContain("invalid ntfy_topic");
      expect(requests).toHaveLength(0);
    },
  );

  it("send - authorizes with the access token and sets click, priority and tags from the message", async () => {
    const { url, requests } = await ntfy();
    const push = ntfyPushSender({
      baseUrl: url,
      token: "tk_secret",
      clickUrl: (msg) => `https://chat.example/c/${msg.chat_id}?m=${msg.message_id}`,
      priority: () => 5,
      tags: (msg) => [msg.kind, "robot"],
    });
    await push.send("alice", device(), reply);
    expect(requests[0].headers).toMatchObject({
      authorization: "Bearer tk_secret",
      click: "https://chat.example/c/c1?m=m1",
      priority: "5",
      tags: "message,robot",
    });
  });

  it("send - approval and clarify notifications default to high priority", async () => {
    const { url, requests } = await ntfy();
    const push = ntfyPushSender({ baseUrl: url });
    await push.send("alice", device(), {
      kind: "notification",
      notification_kind: "approval",
      title: "Approve?",
      body: "rm -rf build",
    });
    await push.send("alice", device(), {
      kind: "notification",
      notification_kind: "cron",
      title: "Cron",
      body: "done",
    });
    expect(requests.map((r) => r.headers.priority)).toEqual(["4", "3"]);
  });

  it("title - non-ASCII survives as RFC 2047 encoded words of at most 75 characters", async () => {
    const { url, requests } = await ntfy();
    const title = "Grüße aus Köln – 🎉 Привет, мир! ".repeat(4).trim();
    await ntfyPushSender({ baseUrl: url }).send("alice", device(), { ...reply, title });
    const sent = requests[0].headers.title as string;
    expect(sent).toMatch(/^[\x20-\x7e]+$/);
    const words = sent.split(" ");
    expect(words.length).toBeGreaterThan(1);
    for (const word of words) {
      expect(word).toMatch(/^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
      expect(word.length).toBeLessThanOrEqual(75);
    }
    expect(decodeRfc2047(sent)).toBe(title);
  });

  it("title - ASCII goes verbatim, control characters become spaces, look-alike encoded words are encoded", async () => {
    const { url, requests } = await ntfy();
    const push = ntfyPushSender({ baseUrl: url });
    await push.send("alice", device(), { ...reply, title: "Line one\r\nInjected: yes" });
    await push.send("alice", device(), { ...reply, title: "=?UTF-8?B?aGk=?=" });
    expect(requests[0].headers.title).toBe("Line one Injected: yes");
    expect(requests[0].headers).not.toHaveProperty("injected");
    expect(requests[1].headers.title).not.toBe("=?UTF-8?B?aGk=?=");
    expect(decodeRfc2047(requests[1].headers.title as string)).toBe("=?UTF-8?B?aGk=?=");
  });

  it("body - a body over ntfy's 4096-byte message limit is cut on a character boundary", async () => {
    const { url, requests } = await ntfy();
    const body = "ä".repeat(3000);
    await ntfyPushSender({ baseUrl: url }).send("alice", device(), { ...reply, body });
    const sent = requests[0].body;
    expect(Buffer.byteLength(sent, "utf8")).toBeLessThanOrEqual(4096);
    expect(sent.endsWith("…")).toBe(true);
    expect(body.startsWith(sent.slice(0, -1))).toBe(true);
  });

  it.each([
    [400, true],
    [401, true],
    [403, true],
    [404, true],
    [429, false],
    [500, false],
    [503, false],
  ])("errors - a %i answer rejects with PushSendError, permanent %s", async (status, permanent) => {
    const { url } = await ntfy({ status, json: { code: status * 100, http: status, error: "nope from ntfy" } });
    const error = await ntfyPushSender({ baseUrl: url })
      .send("alice", device(), reply)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect(error).toMatchObject({ permanent });
    expect((error as Error).message).toContain(String(status));
    expect((error as Error).message).toContain("nope from ntfy");
    expect((error as Error).message).not.toContain("alice-phone-x7Qp"); // the topic is a secret
  });

  it("errors - an unreachable server is a non-permanent PushSendError", async () => {
    const error = await ntfyPushSender({ baseUrl: await refusedUrl() })
      .send("alice", device(), reply)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect(error).toMatchObject({ permanent: false });
  });

  it("errors - a server that does not answer in time is a non-permanent PushSendError", async () => {
    server = await recordingServer(
      () => new Promise<ScriptedResponse>((resolve) => setTimeout(() => resolve({}), 2_000)),
    );
    const error = await ntfyPushSender({ baseUrl: server.url, timeoutMs: 100 })
      .send("alice", device(), reply)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PushSendError);
    expect(error).toMatchObject({ permanent: false });
  });

  it("errors - a priority outside 1..5 is a permanent PushSendError and sends nothing", async () => {
    const { url, requests } = await ntfy();
    const push = ntfyPushSender({ baseUrl: url, priority: () => 7 as 5 });
    await expect(push.send("alice", device(), reply)).rejects.toMatchObject({ name: "PushSendError", permanent: true });
    expect(requests).toHaveLength(0);
  });

  it("options - misconfiguration is a TypeError at construction", () => {
    expect(() => ntfyPushSender({ baseUrl: "not a url" })).toThrow(TypeError);
    expect(() => ntfyPushSender({ baseUrl: "ftp://ntfy.example" })).toThrow(/http or https/);
    expect(() => ntfyPushSender({ token: "" })).toThrow(/token/);
    expect(() => ntfyPushSender({ token: "tk_a b" })).toThrow(TypeError);
    expect(() => ntfyPushSender({ priority: 4 as never })).toThrow(/priority/);
    expect(() => ntfyPushSender({ timeoutMs: 0 })).toThrow(/timeoutMs/);
  });
});
