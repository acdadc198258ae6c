// The OpenAI-compatible doors across two example-server processes on one PostgreSQL schema and one
// Redis prefix: a stateless client that re-sends its whole history, spread over both as a load
// balancer would spread it, keeps one conversation; a response made on one is continued, read and
// resumed on the other.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import OpenAI from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { Client, type Frame } from "../gateway/harness.js";
import { postgresAvailable, redisAvailable } from "../fixtures/services.js";
import { createCluster, type Cluster, type GatewayProcess } from "./cluster.js";

const available = (await postgresAvailable("multi-process doors")) && (await redisAvailable("multi-process doors"));

const PASSWORD = "correct horse battery";

type Msg = { role: "user" | "assistant"; content: string };

describe.skipIf(!available)("multi-process doors on PostgreSQL and Redis", { timeout: 120_000 }, () => {
  let cluster: Cluster;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let token: string;
  let device: Client;
  const openai = (on: GatewayProcess) => new OpenAI({ baseURL: `${on.base}/v1`, apiKey: token, maxRetries: 0 });

  /** The owner's threads of the default channel, each with its messages oldest first. */
  async function threads(): Promise<Map<string, Frame["payload"][]>> {
    const list = await device.request("channel.list", {});
    const channels = list.payload.channels as Array<{
      chat_id: string;
      kind: string;
      is_default: boolean;
      parent_chat_id: string | null;
    }>;
    const main = channels.find((c) => c.is_default)!.chat_id;
    const result = new Map<string, Frame["payload"][]>();
    for (const t of channels.filter((c) => c.kind === "thread" && c.parent_chat_id === main)) {
      const page = await device.request("history", { chat_id: main, thread_id: t.chat_id, limit: 200 });
      result.set(t.chat_id, page.payload.messages);
    }
    return result;
  }

  beforeAll(async () => {
    cluster = createCluster();
    cluster.addUser("alice", PASSWORD);
    [a, b] = await Promise.all([cluster.start("A"), cluster.start("B")]);
    const res = await fetch(`${a.base}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: PASSWORD }),
    });
    expect(res.status).toBe(200);
    token = ((await res.json()) as { token: string }).token;
    device = await Client.connect(b.ws, {}, { authorization: `Bearer ${token}` });
  }, 120_000);

  afterAll(async () => {
    await device?.close().catch(() => undefined);
    await cluster?.destroy();
  }, 30_000);

  test("multi-process doors - 20 turns re-sent whole, alternating processes, are 20 user and 20 assistant messages in one thread; a retry to both at once asks nothing twice; an edit forks", async () => {
    const before = new Set((await threads()).keys());
    const history: Msg[] = [];
    for (let turn = 0; turn < 20; turn++) {
      const on = turn % 2 === 0 ? a : b;
      const messages: Msg[] = [...history, { role: "user", content: `turn ${turn}` }];
      const answer = await openai(on).chat.completions.create({ model: "default", messages });
      const content = answer.choices[0].message.content ?? "";
      expect(content).toBe(`You said: turn ${turn}`);
      history.push({ role: "user", content: `turn ${turn}` }, { role: "assistant", content });
    }
    const after = await threads();
    const made = [...after.keys()].filter((id) => !before.has(id));
    expect(made).toHaveLength(1);
    const thread = after.get(made[0])!;
    expect(thread.filter((m) => m.role === "user")).toHaveLength(20);
    expect(thread.filter((m) => m.role === "assistant")).toHaveLength(20);
    expect(thread.map((m) => m.text)).toEqual(history.map((m) => m.content));

    // The same request twice at once, one to each process: one message, one answer, given to both.
    const retry: Msg[] = [...history, { role: "user", content: "once only" }];
    const [one, two] = await Promise.all(
      [a, b].map((on) => openai(on).chat.completions.create({ model: "default", messages: retry })),
    );
    expect(one.id).toBe(two.id);
    expect(one.choices[0].message.content).toBe("You said: once only");
    const retried = (await threads()).get(made[0])!;
    expect(retried.filter((m) => m.role === "user")).toHaveLength(21);
    expect(retried.filter((m) => m.role === "assistant")).toHaveLength(21);

    // An edited earlier answer: a new thread that first holds the edited conversation.
    const edited: Msg[] = [...history.slice(0, 4), { role: "assistant", content: "edited" }];
    const forked = await openai(b).chat.completions.create({
      model: "default",
      messages: [...edited, { role: "user", content: "after the edit" }],
    });
    expect(forked.choices[0].message.content).toBe("You said: after the edit");
    const last = await threads();
    const fork = [...last.keys()].filter((id) => !before.has(id) && id !== made[0]);
    expect(fork).toHaveLength(1);
    expect(last.get(fork[0])!.map((m) => m.text)).toEqual([
      ...edited.map((m) => m.content),
      "after the edit",
      "You said: after the edit",
    ]);
    expect(last.get(made[0])).toHaveLength(42);

    // The same new fork sent at once to both processes: one thread, one message, one answer.
    const again: Msg[] = [...history.slice(0, 2), { role: "assistant", content: "edited twice" }];
    const both = await Promise.all(
      [a, b].map((on) =>
        openai(on).chat.completions.create({
          model: "default",
          messages: [...again, { role: "user", content: "after the second edit" }],
        }),
      ),
    );
    expect(both[0].id).toBe(both[1].id);
    const finally_ = await threads();
    const forks = [...finally_.keys()].filter((id) => !before.has(id) && id !== made[0] && id !== fork[0]);
    expect(forks).toHaveLength(1);
    expect(finally_.get(forks[0])!.map((m) => m.text)).toEqual([
      ...again.map((m) => m.content),
      "after the second edit",
      "You said: after the second edit",
    ]);
  });

  test("multi-process doors - a response made on A is continued, retrieved and resumed with the same sequence numbers on B", async () => {
    const first = await openai(a).responses.create({ model: "default", input: "made on A" });
    const live: ResponseStreamEvent[] = [];
    const stream = await openai(b).responses.create({
      model: "default",
      input: "continued on B",
      previous_response_id: first.id,
      stream: true,
    });
    for await (const event of stream) live.push(event);
    const done = live.at(-1) as { type: string; response: { id: string; output: Array<{ type: string }> } };
    expect(done.type).toBe("response.completed");
    const retrieved = await openai(a).responses.retrieve(done.response.id);
    expect(retrieved.output_text).toBe("You said: continued on B");
    const firstText = live.find((e) => e.type === "response.output_text.delta")!;
    const replayed: ResponseStreamEvent[] = [];
    const resume = await openai(a).responses.retrieve(done.response.id, {
      stream: true,
      starting_after: firstText.sequence_number,
    });
    for await (const event of resume) replayed.push(event);
    // Deltas may come in other pieces; every other event is the live one, number and all.
    const rest = live.filter((e) => e.sequence_number > firstText.sequence_number);
    const frames = (events: ResponseStreamEvent[]) => events.filter((e) => e.type !== "response.output_text.delta");
    expect(frames(replayed)).toEqual(frames(rest));
    const text = (events: ResponseStreamEvent[]) =>
      events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("");
    expect(text(replayed)).toBe(text(rest));
    expect(retrieved.previous_response_id).toBe(first.id);
    const echoes = device.frames.filter(
      (f) => f.type === "message" && (f.payload.text === "made on A" || f.payload.text === "continued on B"),
    );
    expect(echoes).toHaveLength(2);
    expect(echoes[1].payload.thread_id).toBe(echoes[0].payload.thread_id);
  });

  test("multi-process doors - an answer running on A resumes live on B after the event the client saw", async () => {
    // About 1,200 pieces at least 15 ms apart (18 s): the answer still runs when B joins it, however
    // loaded the machine.
    const words = Array.from({ length: 2000 }, (_, i) => `w${i}`).join(" ");
    const stream = await openai(a).responses.create({ model: "default", input: words, stream: true });
    const live: ResponseStreamEvent[] = [];
    let resumed: Promise<ResponseStreamEvent[]> | undefined;
    let endedBeforeJoin: boolean | undefined;
    for await (const event of stream) {
      live.push(event);
      if (event.type !== "response.output_text.delta" || resumed) continue;
      const id = (live[0] as { response: { id: string } }).response.id;
      const joined = await openai(b).responses.retrieve(id, { stream: true, starting_after: event.sequence_number });
      resumed = (async () => {
        const events: ResponseStreamEvent[] = [];
        for await (const e of joined) {
          endedBeforeJoin ??= live.some((l) => l.type === "response.completed");
          events.push(e);
        }
        return events;
      })();
    }
    const again = await resumed!;
    expect(endedBeforeJoin).toBe(false);
    const text = (events: ResponseStreamEvent[]) =>
      events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("");
    const first = live.find((e) => e.type === "response.output_text.delta") as { delta: string };
    expect(text(live)).toBe(`You said: ${words}`);
    expect(text(again)).toBe(text(live).slice(first.delta.length));
    expect(again.at(-1)).toEqual(live.at(-1));
  });
});
