// Asks over HTTP: a door's client (or a script) lists the owner's open asks and answers one, first
// answer wins, and the turn that asked goes on, whatever door or device started it.
import { describe, expect, test } from "vitest";
import OpenAI from "openai";
import { tokenAuthenticator, type RuntimeEvent, type TurnInput } from "chat-gateway";
import { Client } from "../gateway/harness.js";
import { scriptedRuntime } from "../gateway/runtimes.js";
import { doorServerPerTest, type DoorServer } from "./door-harness.js";

const start = doorServerPerTest();

function askingRuntime() {
  return scriptedRuntime(async function* (input: TurnInput): AsyncIterable<RuntimeEvent> {
    const answer = await input.ask({
      kind: "approval",
      title: "Deploy?",
      tool: { name: "deploy", args: { env: "prod" } },
    });
    yield { type: "text", delta: answer.option_id === "approve" ? "deployed" : "not deployed" };
  });
}

async function asksOf(server: DoorServer, key: string): Promise<Array<Record<string, any>>> {
  const response = await fetch(`${server.origin}/api/asks`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { asks: Array<Record<string, any>> }).asks;
}

function answer(server: DoorServer, key: string, pickerId: string, body: unknown): Promise<Response> {
  return fetch(`${server.origin}/api/asks/${pickerId}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("asks over HTTP", () => {
  test("an open ask is listed, answered once over HTTP, and the door's stream goes on", async () => {
    const server = await start({
      runtime: askingRuntime(),
      authenticator: tokenAuthenticator({ ann: "ann", bob: "bob" }),
    });
    const phone = await Client.connect(server.wsUrl, { token: "ann", caps: { pickers: true } });
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: "ann", maxRetries: 0 });
    const completion = client.chat.completions.create({
      model: "default",
      messages: [{ role: "user", content: "ship it" }],
    });
    const card = await phone.waitFor((f) => f.type === "picker.approval");
    const listed = await asksOf(server, "ann");
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ kind: "picker.approval", picker_id: card.payload.picker_id, title: "Deploy?" });
    expect(await asksOf(server, "bob")).toEqual([]);
    const foreign = await answer(server, "bob", card.payload.picker_id, { option_id: "approve" });
    expect(foreign.status).toBe(404);
    const bad = await answer(server, "ann", card.payload.picker_id, { option_id: "launch-missiles" });
    expect(bad.status).toBe(400);
    const [first, second] = await Promise.all([
      answer(server, "ann", card.payload.picker_id, { option_id: "approve" }),
      answer(server, "ann", card.payload.picker_id, { option_id: "deny" }),
    ]);
    const bodies = [await first.json(), await second.json()] as Array<Record<string, unknown>>;
    const won = bodies.filter((b) => b.outcome === "selected");
    expect(won.length).toBeGreaterThanOrEqual(1);
    expect(new Set(won.map((b) => b.option_id)).size).toBe(1);
    const done = await completion;
    const chosen = won[0].option_id;
    expect(done.choices[0].message.content).toBe(chosen === "approve" ? "deployed" : "not deployed");
    await phone.waitFor((f) => f.type === "picker.resolved");
    await phone.request("channel.list", {});
    const resolved = phone.frames.filter((f) => f.type === "picker.resolved");
    expect(resolved).toHaveLength(1);
    expect(await asksOf(server, "ann")).toEqual([]);
    expect((await answer(server, "ann", "pk0_unknownunknown", { option_id: "approve" })).status).toBe(404);
    await phone.close();
  });
});
