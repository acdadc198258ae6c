// First answer wins across the lock screen and the app (docs/PROTOCOL.md §21): 50 asks on a
// sql.js storage, each answered at once by the phone's button, a `picker.select` from the
// laptop and the tablet's button. Each ask resolves exactly once: one stored and one delivered
// `picker.resolved`, one answer to the runtime, exactly one of the three told it won.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type AskAnswer } from "chat-gateway";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { Client } from "../gateway/harness.js";
import { scriptedRuntime } from "../gateway/runtimes.js";
import { actionHarness, until, type ActionHarness } from "./action-harness.js";

const ASKS = 50;

let t: ActionHarness | undefined;
let dir: string | undefined;
afterEach(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  t = dir = undefined;
});

it("action race - 50 asks each answered at once by two buttons and a picker.select resolve exactly once each (sql.js)", async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-action-race-"));
  const answers: Array<{ i: number; answer: AskAnswer }> = [];
  const runtime = scriptedRuntime(async function* (input) {
    for (let i = 0; i < ASKS; i++)
      answers.push({ i, answer: await input.ask({ kind: "approval", title: `step ${i}` }) });
    yield { type: "text", delta: "done" };
  });
  const storage = sqlJsStorage({ dir });
  t = await actionHarness({ runtime, storage });
  for (const id of ["phone", "tablet"])
    await (await Client.connect(t.h.url, { device_id: id, device_name: id, caps: { push: "rec" } })).close();
  const laptop = await Client.connect(t.h.url, { device_id: "laptop", caps: { pickers: true } });
  const watcher = await Client.connect(t.h.url, { device_id: "watcher", caps: { pickers: true } });
  await laptop.request("message.send", { chat_id: "default", text: "go" });

  const winners: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < ASKS; i++) {
    await until(() => {
      const fresh = t!.pushes.filter((p) => p.message.actions && !seen.has(p.message.picker_id!));
      return fresh.length === 2;
    });
    const fresh = t.pushes.filter((p) => p.message.actions && !seen.has(p.message.picker_id!));
    const pickerId = fresh[0]!.message.picker_id!;
    seen.add(pickerId);
    const token = (device: string) =>
      fresh.find((p) => p.device_id === device)!.message.actions!.find((a) => a.option_id === "approve")!.token;
    // All three at once, each ask another one a few milliseconds ahead (the socket is faster than
    // a request), so that every path wins some and loses some.
    const ahead = (k: number) => new Promise((r) => setTimeout(r, k === i % 3 ? 0 : 10));
    const [phone, select, tablet] = await Promise.all([
      ahead(0).then(() => t!.act(pickerId, { token: token("phone") })),
      ahead(1).then(() => laptop.request("picker.select", { picker_id: pickerId, option_id: "deny" })),
      ahead(2).then(() => t!.act(pickerId, { token: token("tablet") })),
    ]);
    const resolved = select.payload as Record<string, unknown>;
    expect(select.type).toBe("picker.resolved");
    const won = [
      phone.status === 200 && "phone",
      resolved.device_id === "laptop" && "laptop",
      tablet.status === 200 && "tablet",
    ];
    expect(won.filter(Boolean)).toHaveLength(1);
    expect([phone.status, tablet.status].every((s) => s === 200 || s === 410)).toBe(true);
    // Whoever won, all three were told the same outcome.
    if (phone.status === 200) expect(phone.body).toEqual(resolved);
    if (tablet.status === 200) expect(tablet.body).toEqual(resolved);
    winners.push(won.find(Boolean) as string);
  }
  await until(() => answers.length === ASKS && watcher.of("picker.resolved").length >= ASKS);
  expect(answers.map((a) => a.i)).toEqual(Array.from({ length: ASKS }, (_, i) => i));
  const delivered = watcher.of("picker.resolved").map((f) => f.payload.picker_id);
  expect(new Set(delivered).size).toBe(ASKS);
  expect(delivered).toHaveLength(ASKS);
  const stored = await storage.readOutbox(ANONYMOUS_OWNER, 0, 10_000, ["picker.resolved"]);
  expect(stored).toHaveLength(ASKS);
  expect(new Set(stored.map((e) => e.payload.picker_id)).size).toBe(ASKS);
  // Each runtime answer is the winner's choice.
  expect(answers.map((a) => a.answer)).toEqual(
    winners.map((w) => ({ outcome: "selected", option_id: w === "laptop" ? "deny" : "approve" })),
  );
});
