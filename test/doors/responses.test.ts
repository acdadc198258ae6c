// POST /v1/responses and GET /v1/responses/{id} through the official openai client: a response is
// an answer of the owner's conversations, its events numbered the same live and replayed.
import { describe, expect, test } from "vitest";
import OpenAI from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { tokenAuthenticator, type RuntimeEvent, type TurnInput } from "chat-gateway";
import { Client } from "../gateway/harness.js";
import { gate, scriptedRuntime } from "../gateway/runtimes.js";
import { doorServerPerTest, type DoorServer } from "./door-harness.js";

const start = doorServerPerTest();

function openai(server: DoorServer, apiKey = "any"): OpenAI {
  return new OpenAI({ baseURL: server.baseURL, apiKey, maxRetries: 0 });
}

async function collect(stream: AsyncIterable<ResponseStreamEvent>): Promise<ResponseStreamEvent[]> {
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

function textOf(events: ResponseStreamEvent[]): string {
  return events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("");
}

/** Thinks, then answers in three pieces. */
function thinkingRuntime() {
  return scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
    yield { type: "reasoning", delta: "Let me " };
    yield { type: "reasoning", delta: "think." };
    for (const piece of ["Answer ", "to: ", input.message.text]) yield { type: "text", delta: piece };
  });
}

/** Streams one piece, then waits for the test (or a stop) before the rest. */
function heldRuntime(held: { wait: Promise<void> }) {
  return scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
    yield { type: "text", delta: "before " };
    await Promise.race([held.wait, new Promise((resolve) => input.signal.addEventListener("abort", resolve))]);
    if (!input.signal.aborted) yield { type: "text", delta: "after" };
  });
}

describe("/v1/responses", () => {
  test("answers whole as a response object, and a WebSocket device of the owner sees the turn live", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const response = await openai(server).responses.create({ model: "default", input: "hello door", store: false });
    expect(response.object).toBe("response");
    expect(response.status).toBe("completed");
    expect(response.output_text).toBe("You said: hello door");
    const echo = await device.waitFor((f) => f.type === "message" && f.payload.role === "user");
    expect(echo.payload.text).toBe("hello door");
    const stop = await device.waitFor(
      (f) => f.type === "message.stop" && f.payload.reply_to === echo.payload.message_id,
    );
    expect(response.id).toBe(`resp_${stop.payload.message_id}`);
    expect(response.output.at(-1)).toMatchObject({ type: "message", role: "assistant", status: "completed" });
    expect(response.usage?.output_tokens).toBe(stop.payload.tokens ?? 0);
    const retrieved = await openai(server).responses.retrieve(response.id);
    expect(retrieved.output_text).toBe("You said: hello door");
    expect(retrieved.status).toBe("completed");
    await device.close();
  });

  test("streams typed events in order, reasoning as summary text, and the client's own stream helper assembles them", async () => {
    const server = await start({ runtime: thinkingRuntime() });
    const stream = openai(server).responses.stream({ model: "default", input: "why?" });
    const events = await collect(stream);
    const final = await stream.finalResponse();
    expect(final.status).toBe("completed");
    expect(final.output[1]).toMatchObject({
      type: "message",
      content: [{ type: "output_text", text: "Answer to: why?" }],
    });
    expect(final.output[0]).toMatchObject({
      type: "reasoning",
      summary: [{ type: "summary_text", text: "Let me think." }],
    });
    const types = events.map((e) => e.type).filter((t, i, all) => t !== all[i - 1]);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const numbers = events.map((e) => e.sequence_number);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(textOf(events)).toBe("Answer to: why?");
    const reasoning = events.map((e) => (e.type === "response.reasoning_summary_text.delta" ? e.delta : "")).join("");
    expect(reasoning).toBe("Let me think.");
  });

  test("a replay after the end carries the same sequence numbers, and resumes inside a delta where the client stopped", async () => {
    const server = await start({ runtime: thinkingRuntime() });
    const client = openai(server);
    const live = await collect(await client.responses.create({ model: "default", input: "resume me", stream: true }));
    const id = (live[0] as { response: { id: string } }).response.id;
    const replay = await collect(await client.responses.retrieve(id, { stream: true }));
    const frames = (events: ResponseStreamEvent[]) => events.filter((e) => !e.type.endsWith(".delta"));
    expect(frames(replay)).toEqual(frames(live));
    expect(textOf(replay)).toBe(textOf(live));
    const lastDelta = (events: ResponseStreamEvent[]) =>
      events.filter((e) => e.type === "response.output_text.delta").at(-1)!.sequence_number;
    expect(lastDelta(replay)).toBe(lastDelta(live));
    // The client saw the text up to its third character: the resume gives the rest, numbered as before.
    const firstText = live.find((e) => e.type === "response.output_text.delta")!;
    const after = firstText.sequence_number - firstText.delta.length + 3;
    const resumed = await collect(await client.responses.retrieve(id, { stream: true, starting_after: after }));
    expect(resumed.every((e) => e.sequence_number > after)).toBe(true);
    expect(textOf(resumed)).toBe(textOf(live).slice(3));
    expect(resumed.map((e) => e.type)).not.toContain("response.created");
    expect(resumed.at(-1)).toEqual(live.at(-1));
  });

  test("previous_response_id continues that answer's lane; a retry of it asks nothing twice", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const client = openai(server);
    const first = await client.responses.create({ model: "default", input: "one" });
    const second = await client.responses.create({ model: "default", input: "two", previous_response_id: first.id });
    expect(second.output_text).toBe("You said: two");
    expect(second.previous_response_id).toBe(first.id);
    const again = await client.responses.create({ model: "default", input: "two", previous_response_id: first.id });
    expect(again.id).toBe(second.id);
    await device.waitFor((f) => f.type === "message.stop" && f.payload.message_id === second.id.slice("resp_".length));
    const users = device.frames.filter((f) => f.type === "message" && f.payload.role === "user");
    expect(users.map((f) => f.payload.text)).toEqual(["one", "two"]);
    expect(users[1].payload.thread_id).toBe(users[0].payload.thread_id);
    expect(users[0].payload.thread_id).not.toBeNull();
    await device.close();
  });

  test("message items map onto one thread as chat completions do; system items are ignored", async () => {
    const server = await start();
    const device = await Client.connect(server.wsUrl);
    const client = openai(server);
    const first = await client.responses.create({ model: "default", input: [{ role: "user", content: "hi" }] });
    const second = await client.responses.create({
      model: "default",
      input: [
        { role: "system", content: "be brief" },
        { role: "user", content: [{ type: "input_text", text: "hi" }] },
        { role: "assistant", content: first.output_text },
        { role: "user", content: "and then" },
      ],
    });
    expect(second.output_text).toBe("You said: and then");
    await device.waitFor((f) => f.type === "message" && f.payload.text === "and then");
    const users = device.frames.filter((f) => f.type === "message" && f.payload.role === "user");
    expect(users.map((f) => f.payload.text)).toEqual(["hi", "and then"]);
    expect(users[1].payload.thread_id).toBe(users[0].payload.thread_id);
    await device.close();
  });
});

describe("/v1/responses errors", () => {
  test("an answer that ends in error is response.failed, streamed and whole, with the text so far", async () => {
    const failing = scriptedRuntime(async function* (): AsyncIterable<RuntimeEvent> {
      yield { type: "text", delta: "partial " };
      throw new Error("the model went away");
    });
    const server = await start({ runtime: failing });
    const client = openai(server);
    const events = await collect(await client.responses.create({ model: "default", input: "fail", stream: true }));
    const last = events.at(-1) as { type: string; response: { status: string; error: { code: string } | null } };
    expect(last.type).toBe("response.failed");
    expect(last.response.status).toBe("failed");
    expect(last.response.error?.code).toBe("server_error");
    expect(textOf(events).startsWith("partial ")).toBe(true);
    const whole = await client.responses.create({ model: "default", input: "fail again" });
    expect(whole.status).toBe("failed");
    expect(whole.output_text.startsWith("partial ")).toBe(true);
  });

  test("another owner's response id is 404 as an unknown one; an unknown model 404; a non-user last item 400", async () => {
    const server = await start({ authenticator: tokenAuthenticator({ "key-ann": "ann", "key-bob": "bob" }) });
    const ann = openai(server, "key-ann");
    const bob = openai(server, "key-bob");
    const bobs = await bob.responses.create({ model: "default", input: "bob's secret" });
    await expect(ann.responses.retrieve(bobs.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(ann.responses.retrieve(bobs.id, { stream: true })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(ann.responses.retrieve("resp_nope")).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(ann.responses.retrieve("not-a-response")).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      ann.responses.create({ model: "default", input: "leak?", previous_response_id: bobs.id }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(ann.responses.create({ model: "nope", input: "hi" })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const notUser = ann.responses.create({
      model: "default",
      input: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
      ],
    });
    await expect(notUser).rejects.toMatchObject({ status: 400, code: "last_message_not_user" });
    const url = ann.responses.create({
      model: "default",
      input: [
        { role: "user", content: [{ type: "input_image", image_url: "http://example.com/x.png", detail: "auto" }] },
      ],
    });
    await expect(url).rejects.toMatchObject({ status: 400, code: "invalid_image_url" });
    const auth = { authorization: "Bearer key-ann" };
    const wrongMethod = await fetch(`${server.baseURL}/responses/${bobs.id}`, { method: "DELETE", headers: auth });
    expect(wrongMethod.status).toBe(405);
    const badAfter = await fetch(`${server.baseURL}/responses/${bobs.id}?stream=true&starting_after=-1`, {
      headers: auth,
    });
    expect(badAfter.status).toBe(400);
    expect(((await badAfter.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    const annDevice = await Client.connect(server.wsUrl, { token: "key-ann" });
    const list = await annDevice.request("channel.list", {});
    for (const c of list.payload.channels as Array<{ chat_id: string }>) {
      const page = await annDevice.request("history", { chat_id: c.chat_id, limit: 50 });
      expect(page.payload.messages).toEqual([]);
    }
    await annDevice.close();
  });
});

describe("/v1/responses, live on every device", () => {
  test("a running answer resumes live after starting_after; turn.stop from a WebSocket device ends it response.incomplete", async () => {
    const held = gate();
    const server = await start({ runtime: heldRuntime(held) });
    const phone = await Client.connect(server.wsUrl);
    const client = openai(server);
    const stream = await client.responses.create({ model: "default", input: "long", stream: true });
    const events: ResponseStreamEvent[] = [];
    let resumed: Promise<ResponseStreamEvent[]> | undefined;
    for await (const event of stream) {
      events.push(event);
      if (event.type === "response.output_text.delta" && resumed === undefined) {
        const id = (events[0] as { response: { id: string } }).response.id;
        const after = event.sequence_number - 2;
        resumed = collect(await client.responses.retrieve(id, { stream: true, starting_after: after }));
        const first = await phone.waitFor((f) => f.type === "message.start");
        await phone.request("turn.stop", { chat_id: first.payload.chat_id, thread_id: first.payload.thread_id });
      }
    }
    held.release();
    expect(textOf(events)).toBe("before ");
    const last = events.at(-1) as { type: string; response: { status: string } };
    expect(last.type).toBe("response.incomplete");
    expect(last.response.status).toBe("incomplete");
    const again = await resumed!;
    expect(textOf(again)).toBe("e ");
    expect(again.at(-1)).toEqual(events.at(-1));
    const stop = await phone.waitFor((f) => f.type === "message.stop");
    expect(stop.payload.status).toBe("stopped");
    await phone.close();
  });
});
