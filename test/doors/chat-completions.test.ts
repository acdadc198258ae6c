// POST /v1/chat/completions and GET /v1/models through the official openai client: a stateless
// client's conversation is one thread of the same conversations the WebSocket devices see.
import { describe, expect, test } from "vitest";
import OpenAI from "openai";
import { Client, type Frame } from "../gateway/harness.js";
import { doorServerPerTest, type DoorServer } from "./door-harness.js";

const start = doorServerPerTest();

function openai(server: DoorServer, apiKey = "any"): OpenAI {
  return new OpenAI({ baseURL: server.baseURL, apiKey, maxRetries: 0 });
}

type Msg = { role: "user" | "assistant" | "system"; content: string };

/** The owner's threads of a channel, and each thread's messages (oldest first), as a device reads them. */
async function threadsOf(device: Client, chatId: string): Promise<Map<string, Frame["payload"][]>> {
  const list = await device.request("channel.list", {});
  const threads = (
    list.payload.channels as Array<{ chat_id: string; kind: string; parent_chat_id: string | null }>
  ).filter((c) => c.kind === "thread" && c.parent_chat_id === chatId);
  const result = new Map<string, Frame["payload"][]>();
  for (const t of threads) {
    const page = await device.request("history", { chat_id: chatId, thread_id: t.chat_id, limit: 200 });
    result.set(t.chat_id, page.payload.messages);
  }
  return result;
}

async function defaultChannel(device: Client): Promise<string> {
  const list = await device.request("channel.list", {});
  return (list.payload.channels as Array<{ chat_id: string; is_default: boolean }>).find((c) => c.is_default)!.chat_id;
}

describe("/v1/models", () => {
  test("lists default first, then each channel that takes messages, by name", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    await device.request("channel.create", { name: "Work", kind: "channel" });
    const models = await openai(server).models.list();
    const ids = models.data.map((m) => m.id);
    expect(ids[0]).toBe("default");
    expect(ids).toContain("General");
    expect(ids).toContain("Work");
    expect(models.data.every((m) => m.object === "model" && m.owned_by === "chat-gateway")).toBe(true);
    const one = await openai(server).models.retrieve("Work");
    expect(one.id).toBe("Work");
    await expect(openai(server).models.retrieve("nope")).rejects.toMatchObject({ status: 404 });
    await device.close();
  });
});

describe("/v1/chat/completions", () => {
  test("answers whole, and a WebSocket device of the owner sees the turn live", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const answer = await openai(server).chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "hello door" }],
    });
    expect(answer.object).toBe("chat.completion");
    expect(answer.choices[0].message).toMatchObject({ role: "assistant", content: "You said: hello door" });
    expect(answer.choices[0].finish_reason).toBe("stop");
    const echo = await device.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(echo.payload.text).toBe("hello door");
    expect(echo.payload.thread_id).not.toBeNull();
    const stop = await device.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id,
    );
    expect(answer.id).toBe(`chatcmpl-${stop.payload.message_id}`);
    expect(
      device.frames.some((f) => f.type === "message.start" && f.payload.message_id === stop.payload.message_id),
    ).toBe(true);
    await device.close();
  });

  test("streams chunks whose content adds up to the stored answer, then usage and [DONE]", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const stream = await openai(server).chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "stream me a reasonably long sentence please" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0].choices[0].delta.role).toBe("assistant");
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe("You said: stream me a reasonably long sentence please");
    const finishes = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finishes.map((c) => c.choices[0].finish_reason)).toEqual(["stop"]);
    expect(chunks.at(-1)!.usage).toBeDefined();
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const stop = await device.waitFor((f) => f.type === "message.stop");
    expect(stop.payload.final_text).toBe(text);
    await device.close();
  });

  test("20 turns re-sent as a stateless client does leave 20 user and 20 assistant messages in one thread", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const client = openai(server);
    const history: Msg[] = [{ role: "system", content: "You are helpful." }];
    for (let i = 0; i < 20; i++) {
      history.push({ role: "user", content: `question ${i}` });
      const answer = await client.chat.completions.create({ model: "default", messages: history, stream: i % 2 === 0 });
      let text = "";
      if (Symbol.asyncIterator in answer) for await (const c of answer) text += c.choices[0]?.delta.content ?? "";
      else text = answer.choices[0].message.content ?? "";
      expect(text).toBe(`You said: question ${i}`);
      history.push({ role: "assistant", content: text });
    }
    const threads = await threadsOf(device, await defaultChannel(device));
    expect(threads.size).toBe(1);
    const [messages] = [...threads.values()];
    expect(messages.filter((m) => m.role === "user")).toHaveLength(20);
    expect(messages.filter((m) => m.role === "assistant")).toHaveLength(20);
    expect(messages.map((m) => m.text)).toEqual(history.slice(1).map((m) => m.content));
    await device.close();
  });

  test("a retried request asks nothing twice: it gets the same answer", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const client = openai(server);
    const first = await client.chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "one" }],
    });
    const messages: Msg[] = [
      { role: "user", content: "one" },
      { role: "assistant", content: first.choices[0].message.content ?? "" },
      { role: "user", content: "two" },
    ];
    const a = await client.chat.completions.create({ model: "default", messages });
    const b = await client.chat.completions.create({ model: "default", messages });
    const c = await client.chat.completions.create({ model: "default", messages, stream: true });
    let streamed = "";
    let streamId = "";
    for await (const chunk of c) {
      streamed += chunk.choices[0]?.delta.content ?? "";
      streamId = chunk.id;
    }
    expect(b.id).toBe(a.id);
    expect(streamId).toBe(a.id);
    expect(streamed).toBe("You said: two");
    const threads = await threadsOf(device, await defaultChannel(device));
    const [thread] = [...threads.values()];
    expect(thread.map((m) => m.text)).toEqual(["one", "You said: one", "two", "You said: two"]);
    await device.close();
  });

  test("an edited history forks into a new thread that holds the earlier messages", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const client = openai(server);
    await client.chat.completions.create({ model: "default", messages: [{ role: "user", content: "first" }] });
    const forked = await client.chat.completions.create({
      model: "default",
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "an answer the person edited" },
        { role: "user", content: "next" },
      ],
    });
    expect(forked.choices[0].message.content).toBe("You said: next");
    const threads = await threadsOf(device, await defaultChannel(device));
    expect(threads.size).toBe(2);
    const texts = [...threads.values()].map((ms) => ms.map((m) => m.text));
    expect(texts).toContainEqual(["first", "You said: first"]);
    expect(texts).toContainEqual(["first", "an answer the person edited", "next", "You said: next"]);
    await device.close();
  });

  test("two new conversations that open with the same words stay two threads", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const client = openai(server);
    for (let run = 0; run < 2; run++) {
      const a = await client.chat.completions.create({ model: "default", messages: [{ role: "user", content: "hi" }] });
      await client.chat.completions.create({
        model: "default",
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: a.choices[0].message.content ?? "" },
          { role: "user", content: `then ${run}` },
        ],
      });
    }
    const threads = await threadsOf(device, await defaultChannel(device));
    const texts = [...threads.values()].map((ms) => ms.map((m) => m.text));
    expect(texts).toHaveLength(2);
    expect(texts).toContainEqual(["hi", "You said: hi", "then 0", "You said: then 0"]);
    expect(texts).toContainEqual(["hi", "You said: hi", "then 1", "You said: then 1"]);
    await device.close();
  });
});
