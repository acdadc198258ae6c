// An ask answered from its push's buttons (docs/PROTOCOL.md §21): a real gateway whose pushes a
// stand-in sender records, and the act route on a real HTTP server. A good token answers as its
// push target's device; a bad, altered, other-ask, other-option or other-owner token is 401 with
// one body; an ask answered otherwise or expired is 410; tokens never reach a URL or a log line.
import { afterEach, expect, it } from "vitest";
import type { Ask, AskAnswer, Authenticator } from "chat-gateway";
import { Client } from "../gateway/harness.js";
import { scriptedRuntime } from "../gateway/runtimes.js";
import { actionHarness, until, type ActionHarness } from "./action-harness.js";

let t: ActionHarness | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** A runtime that asks `ask` once per turn and answers with what it got. */
function asking(ask: Partial<Ask> = {}) {
  const answers: AskAnswer[] = [];
  const runtime = scriptedRuntime(async function* (input) {
    const answer = await input.ask({ kind: "approval", title: "Run rm -rf build/?", ...ask } as Ask);
    answers.push(answer);
    yield { type: "text", delta: JSON.stringify(answer) };
  });
  return { runtime, answers };
}

/** The phone and the tablet are push targets; the laptop stays connected and asks. */
async function askWithTargets(harness: ActionHarness) {
  for (const id of ["phone", "tablet"])
    await (await Client.connect(harness.h.url, { device_id: id, device_name: id, caps: { push: "rec" } })).close();
  const laptop = await Client.connect(harness.h.url, { device_id: "laptop", caps: { push: "none", pickers: true } });
  await laptop.request("message.send", { chat_id: "default", text: "clean up" });
  await until(() => harness.pushes.filter((p) => p.message.picker_id).length === 2);
  const push = (device: string) => harness.pushes.find((p) => p.device_id === device && p.message.picker_id)!.message;
  return { laptop, phone: push("phone"), tablet: push("tablet"), pickerId: push("phone").picker_id! };
}

it("ask actions - an approval's push carries Approve and Deny, each a fresh token posting to the public URL's act path", async () => {
  const { runtime } = asking();
  t = await actionHarness({ runtime });
  const { phone, tablet, pickerId } = await askWithTargets(t);
  expect(phone.actions?.map((a) => [a.option_id, a.title])).toEqual([
    ["approve", "Approve"],
    ["deny", "Deny"],
  ]);
  for (const action of [...phone.actions!, ...tablet.actions!]) {
    expect(action.url).toBe(`https://chat.example.com/api/asks/${pickerId}/act`);
    expect(action.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  }
  const tokens = [...phone.actions!, ...tablet.actions!].map((a) => a.token);
  expect(new Set(tokens).size).toBe(4);
});

it("ask actions - a good token answers as its target's device; a repeat gets the outcome that stands; the other button is 410", async () => {
  const { runtime, answers } = asking();
  t = await actionHarness({ runtime });
  const { laptop, phone, pickerId } = await askWithTargets(t);
  const approve = phone.actions!.find((a) => a.option_id === "approve")!;
  const first = await t.act(pickerId, { token: approve.token });
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({
    picker_id: pickerId,
    outcome: "selected",
    option_id: "approve",
    device_id: "phone",
  });
  expect(first.body.device_name).toBe("phone");
  expect(await t.act(pickerId, { token: approve.token })).toEqual(first);
  const deny = phone.actions!.find((a) => a.option_id === "deny")!;
  expect((await t.act(pickerId, { token: deny.token })).status).toBe(410);
  await until(() => answers.length === 1);
  expect(answers).toEqual([{ outcome: "selected", option_id: "approve" }]);
  await until(() => laptop.of("picker.resolved").length === 1);
  expect(laptop.of("picker.resolved")[0]!.payload).toMatchObject({ option_id: "approve", device_id: "phone" });
});

it("ask actions - bad, altered, other-ask, other-option and malformed tokens are all 401 with one body, open or resolved", async () => {
  const { runtime } = asking();
  t = await actionHarness({ runtime });
  const { phone, pickerId } = await askWithTargets(t);
  const approve = phone.actions!.find((a) => a.option_id === "approve")!;
  const altered = `${approve.token.slice(0, -1)}${approve.token.endsWith("A") ? "B" : "A"}`;
  const refusals = async () => [
    await t!.act(pickerId, { token: "A".repeat(43) }),
    await t!.act(pickerId, { token: altered }),
    await t!.act("pk-other-ask", { token: approve.token }),
    await t!.act(pickerId, { token: approve.token, option_id: "deny" }),
    await t!.act(pickerId, { token: "short" }),
  ];
  const whileOpen = await refusals();
  expect(whileOpen.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
  expect(new Set(whileOpen.map((r) => JSON.stringify(r.body))).size).toBe(1);
  expect((await t.act(pickerId, { token: approve.token })).status).toBe(200);
  const afterwards = await refusals();
  expect(afterwards).toEqual(whileOpen);
  expect((await t.act(pickerId, { nope: 1 })).status).toBe(400);
});

it("ask actions - another owner's token is 401 on an ask of this owner", async () => {
  const { runtime } = asking();
  // Each device's token names its owner: "alice-…" or "bob-…".
  const authenticator: Authenticator = {
    async authenticate(hello) {
      return { owner: hello.token.split("-")[0]!, user: null };
    },
  };
  t = await actionHarness({ runtime, authenticator });
  const url = t.h.url;
  for (const who of ["alice", "bob"]) {
    await (await Client.connect(url, { token: `${who}-1`, device_id: `${who}-phone`, caps: { push: "rec" } })).close();
  }
  const alice = await Client.connect(url, { token: "alice-2", device_id: "alice-laptop" });
  const bob = await Client.connect(url, { token: "bob-2", device_id: "bob-laptop" });
  await alice.request("message.send", { chat_id: "default", text: "a" });
  await bob.request("message.send", { chat_id: "default", text: "b" });
  await until(() => t!.pushes.filter((p) => p.message.actions).length === 2);
  const of = (owner: string) => t!.pushes.find((p) => p.owner === owner && p.message.actions)!.message;
  const bobsToken = of("bob").actions![0]!.token;
  const refused = await t.act(of("alice").picker_id!, { token: bobsToken });
  expect(refused.status).toBe(401);
  expect((await t.act(of("bob").picker_id!, { token: bobsToken })).status).toBe(200);
});

it("ask actions - an ask answered in the app first, or expired, is 410 for its buttons", async () => {
  const { runtime, answers } = asking();
  t = await actionHarness({ runtime, askExpiresMs: 60_000 });
  const { laptop, phone, pickerId } = await askWithTargets(t);
  await laptop.request("picker.select", { picker_id: pickerId, option_id: "deny" });
  const approve = phone.actions!.find((a) => a.option_id === "approve")!;
  expect(await t.act(pickerId, { token: approve.token })).toMatchObject({ status: 410 });
  await until(() => answers.length === 1);
  expect(answers).toEqual([{ outcome: "selected", option_id: "deny" }]);

  // Pushed while open (an ask that resolves while its push waits is not pushed, §21.6), then expired.
  const expiring = asking({ expiresInMs: 2_000 } as Partial<Ask>);
  await t.close();
  t = await actionHarness({ runtime: expiring.runtime });
  const again = await askWithTargets(t);
  await until(() => expiring.answers.length === 1);
  expect(expiring.answers[0]!.outcome).toBe("expired");
  expect((await t.act(again.pickerId, { token: again.phone.actions![0]!.token })).status).toBe(410);
});

it("ask actions - a confirm_in_app ask's push has no buttons and opens its lane", async () => {
  const { runtime } = asking({ confirmInApp: true });
  t = await actionHarness({ runtime });
  const { phone } = await askWithTargets(t);
  expect(phone.actions).toBeUndefined();
  expect(phone.url).toBe("https://chat.example.com/?chat=default");
});

it("ask actions - tokens never appear in a URL or a log line", async () => {
  const { runtime } = asking();
  t = await actionHarness({ runtime });
  const { phone, tablet, pickerId } = await askWithTargets(t);
  const tokens = [...phone.actions!, ...tablet.actions!].map((a) => a.token);
  for (const a of [...phone.actions!, ...tablet.actions!]) expect(a.url).not.toContain(a.token);
  await t.act(pickerId, { token: tokens[0] });
  await t.act(pickerId, { token: tokens[0] });
  await t.act(pickerId, { token: tokens[3] });
  await t.act(pickerId, { token: `${tokens[1]!.slice(0, -2)}xx` });
  expect(t.logged.some((l) => l.startsWith("request POST"))).toBe(true);
  for (const token of tokens) expect(t.logged.filter((l) => l.includes(token))).toEqual([]);
});
