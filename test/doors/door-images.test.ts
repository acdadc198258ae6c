// Images through the doors (docs/PROTOCOL.md §19.3), sent with the official openai client: a
// data: URL of an image type becomes the door device's media, uploaded as a WebSocket device
// uploads, and goes with the message; a URL to fetch, bad base64, another type or an image over
// the media limit is refused and stores nothing.
import { describe, expect, test } from "vitest";
import OpenAI from "openai";
import { memoryMediaStore } from "chat-gateway/media/memory";
import { Client, type Frame } from "../gateway/harness.js";
import { doorServerPerTest, type DoorServer } from "./door-harness.js";

const start = doorServerPerTest();

/** A real 1×1 PNG. */
const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const PNG_BYTES = Buffer.from(PNG_BASE64, "base64").byteLength;
const PNG_URL = `data:image/png;base64,${PNG_BASE64}`;

function openai(server: DoorServer): OpenAI {
  return new OpenAI({ baseURL: server.baseURL, apiKey: "any", maxRetries: 0 });
}

function withMedia(options: Record<string, unknown> = {}) {
  return start({ mediaStore: memoryMediaStore(), ...options });
}

type Part = OpenAI.Chat.Completions.ChatCompletionContentPart;

function userWith(text: string, url: string): OpenAI.Chat.Completions.ChatCompletionMessageParam {
  const parts: Part[] = [
    { type: "text", text },
    { type: "image_url", image_url: { url } },
  ];
  return { role: "user", content: parts };
}

const userMessages = (device: Client): Frame[] =>
  device.frames.filter((f) => f.type === "message" && f.payload.role === "user");

describe("door images - chat completions", () => {
  test("a data: URL image is uploaded as media and sent with the message; a device sees both", async () => {
    const server = await withMedia();
    const device = await Client.connect(server.wsUrl);
    const answer = await openai(server).chat.completions.create({
      model: "default",
      messages: [userWith("what is in this picture?", PNG_URL)],
    });
    expect(answer.choices[0]!.message.content).not.toBe("");
    const echo = await device.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(echo.payload.text).toBe("what is in this picture?");
    expect(echo.payload.media).toEqual([
      expect.objectContaining({ kind: "image", mime: "image/png", size: PNG_BYTES, filename: "image-1.png" }),
    ]);
    await device.close();
  });

  test("an earlier image re-sent with the history is not uploaded again: one thread, one image", async () => {
    const server = await withMedia();
    const device = await Client.connect(server.wsUrl);
    const first = userWith("look", PNG_URL);
    const reply = await openai(server).chat.completions.create({ model: "default", messages: [first] });
    const text = reply.choices[0]!.message.content ?? "";
    await openai(server).chat.completions.create({
      model: "default",
      messages: [first, { role: "assistant", content: text }, { role: "user", content: "and now?" }],
    });
    await device.waitFor(() => userMessages(device).length === 2);
    const [one, two] = userMessages(device);
    expect(two!.payload.thread_id).toBe(one!.payload.thread_id);
    expect(one!.payload.media).toHaveLength(1);
    expect(two!.payload.media).toEqual([]);
    await device.close();
  });

  test("an image alone, without text, is a message", async () => {
    const server = await withMedia();
    const device = await Client.connect(server.wsUrl);
    await openai(server).chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: PNG_URL } }] }],
    });
    const echo = await device.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(echo.payload.media).toHaveLength(1);
    await device.close();
  });

  test.each([
    ["a URL to fetch", "https://example.com/cat.png", 400, "invalid_image_url"],
    ["bad base64", "data:image/png;base64,%%%not-base64", 400, "invalid_image_data"],
    ["no base64 marker", `data:image/png,${PNG_BASE64}`, 400, "invalid_image_data"],
    ["an SVG", "data:image/svg+xml;base64,PHN2Zy8+", 400, "unsupported_image_type"],
    ["a PDF", "data:application/pdf;base64,JVBERi0=", 400, "unsupported_image_type"],
  ])("%s is refused (%i %s) and nothing is stored", async (_name, url, status, code) => {
    const server = await withMedia();
    const device = await Client.connect(server.wsUrl);
    await expect(
      openai(server).chat.completions.create({ model: "default", messages: [userWith("see", url)] }),
    ).rejects.toMatchObject({ status, code });
    // Also in an earlier message: the gateway fetches no URL anywhere in a request.
    await expect(
      openai(server).chat.completions.create({
        model: "default",
        messages: [userWith("see", url), { role: "assistant", content: "ok" }, { role: "user", content: "hi" }],
      }),
    ).rejects.toMatchObject({ status, code });
    const list = await device.request("channel.list", {});
    const threads = (list.payload.channels as Array<{ kind: string }>).filter((c) => c.kind === "thread");
    expect(threads).toEqual([]);
    expect(userMessages(device)).toEqual([]);
    await device.close();
  });

  test("an image over the gateway's media limit is 413 and nothing is sent", async () => {
    const server = await withMedia({ maxMediaBytes: 40 });
    const device = await Client.connect(server.wsUrl);
    await expect(
      openai(server).chat.completions.create({ model: "default", messages: [userWith("big", PNG_URL)] }),
    ).rejects.toMatchObject({ status: 413 });
    expect(userMessages(device)).toEqual([]);
    await device.close();
  });

  test("a gateway without a media store refuses an image (400), sending nothing", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    await expect(
      openai(server).chat.completions.create({ model: "default", messages: [userWith("see", PNG_URL)] }),
    ).rejects.toMatchObject({ status: 400 });
    expect(userMessages(device)).toEqual([]);
    await device.close();
  });
});

describe("door images - responses and /api/chat", () => {
  test("an input_image data: URL goes with the message; a URL to fetch is 400", async () => {
    const server = await withMedia();
    const device = await Client.connect(server.wsUrl);
    const response = await openai(server).responses.create({
      model: "default",
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "describe" },
            { type: "input_image", image_url: PNG_URL, detail: "auto" },
          ],
        },
      ],
    });
    expect(response.status).toBe("completed");
    const echo = await device.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(echo.payload.media).toEqual([expect.objectContaining({ kind: "image", mime: "image/png" })]);
    await expect(
      openai(server).responses.create({
        model: "default",
        input: [
          { role: "user", content: [{ type: "input_image", image_url: "http://example.com/x.png", detail: "auto" }] },
        ],
      }),
    ).rejects.toMatchObject({ status: 400, code: "invalid_image_url" });
    await device.close();
  });

  test("a UI message's image file part goes with the message; another file type is 400", async () => {
    const server = await withMedia();
    const device = await Client.connect(server.wsUrl);
    const post = (part: Record<string, unknown>) =>
      fetch(`${server.origin}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer any" },
        body: JSON.stringify({
          id: `chat-${Math.random()}`,
          trigger: "submit-message",
          messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "this one" }, part] }],
        }),
      });
    const ok = await post({ type: "file", mediaType: "image/png", url: PNG_URL, filename: "cat.png" });
    expect(ok.status).toBe(200);
    await ok.text();
    const echo = await device.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(echo.payload.media).toEqual([expect.objectContaining({ kind: "image", size: PNG_BYTES })]);
    const pdf = await post({ type: "file", mediaType: "application/pdf", url: "data:application/pdf;base64,JVBERi0=" });
    expect(pdf.status).toBe(400);
    await device.close();
  });
});
