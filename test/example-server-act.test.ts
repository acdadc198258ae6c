// The act route through the example server's gate (docs/PROTOCOL.md §21.3), as a person runs it: a
// child process with login on, the ntfy sender posting to a stand-in server, and an ask's push
// whose buttons carry the action tokens. The route needs no session and reads no cookie, so the
// Origin rule of cookie requests does not apply to it: the token alone decides. Tokens never reach
// a URL the server makes, nor a line it logs.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { Client } from "./gateway/harness.js";
import { recordingServer, type RecordingServer } from "./push/recording-server.js";
import { runServerCli, startServerProcess, type ServerProcess } from "./example-server-process.js";

let server: ServerProcess | undefined;
let ntfy: RecordingServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  server?.child.kill("SIGKILL");
  await ntfy?.close();
  server = ntfy = undefined;
});

const PASSWORD = "correct horse battery";

/** An ntfy `http` action as published: where it posts and its `{token}` body. */
interface NtfyAction {
  label: string;
  url: string;
  body: string;
}

it("example server act - an ask's button answers without a session through the gate; a cookie or an Origin changes nothing; tokens are in no URL and no log line", async () => {
  ntfy = await recordingServer(() => ({ json: { id: "n1" } }));
  const dataDir = mkdtempSync(join(tmpdir(), "gw-act-"));
  const env = {
    GATEWAY_DATA_DIR: dataDir,
    GATEWAY_NTFY_URL: ntfy.url,
    GATEWAY_PUSH_AFTER_MS: "0",
    GATEWAY_PUBLIC_URL: "https://chat.example.com",
  };
  expect(runServerCli(["user", "add", "alice", "--no-adopt"], env, `${PASSWORD}\n`).status).toBe(0);
  server = await startServerProcess(env);
  const { base, ws } = server;
  const login = await fetch(`${base}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ username: "alice", password: PASSWORD }),
  });
  const { token: session } = (await login.json()) as { token: string };
  const cookie = String(login.headers.get("set-cookie")).split(";", 1)[0]!;
  const auth = { authorization: `Bearer ${session}` };
  for (const id of ["phone", "tablet"])
    await (
      await Client.connect(
        ws,
        { device_id: id, device_name: id, caps: { push: "ntfy" }, ntfy_topic: `alice-${id}` },
        auth,
      )
    ).close();
  const laptop = await Client.connect(ws, { device_id: "laptop", caps: { pickers: true } }, auth);
  clients.push(laptop);
  await laptop.request("message.send", { chat_id: "default", text: "approve: deploy" });
  const card = await laptop.waitFor((f) => f.type === "picker.approval", 10_000);
  const pickerId = String(card.payload.picker_id);
  const buttons = (topic: string): NtfyAction[] => {
    const publish = ntfy!.requests.find((r) => r.url === `/${topic}` && r.headers.actions);
    return publish ? (JSON.parse(String(publish.headers.actions)) as NtfyAction[]) : [];
  };
  await ntfy!.until(
    () => buttons("alice-phone").length > 0 && buttons("alice-tablet").length > 0,
    "both devices' pushes with their buttons",
  );
  const tokenOf = (topic: string, label: string) =>
    (JSON.parse(buttons(topic).find((b) => b.label === label)!.body) as { token: string }).token;
  const approve = tokenOf("alice-phone", "Approve");
  const tabletDeny = tokenOf("alice-tablet", "Deny");
  const tokens = ["alice-phone", "alice-tablet"].flatMap((t) => buttons(t).map((b) => JSON.parse(b.body).token));
  expect(tokens).toHaveLength(4);
  for (const b of [...buttons("alice-phone"), ...buttons("alice-tablet")]) {
    expect(b.url).toBe(`https://chat.example.com/api/asks/${pickerId}/act`);
    expect(tokens.some((t) => b.url.includes(t))).toBe(false);
  }

  const act = (body: string | undefined, headers: Record<string, string> = {}, query = "") =>
    fetch(`${base}/api/asks/${pickerId}/act${query}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body }),
    });
  // The gate is on: anything else under /api/ without a session is refused.
  expect((await fetch(`${base}/api/auth/users`)).status).toBe(401);
  // A session's cookie is not read: without a good token it answers nothing.
  expect((await act(JSON.stringify({ token: "x".repeat(43) }), { cookie, origin: base })).status).toBe(401);
  expect((await act("{}", { cookie, origin: base })).status).toBe(400);
  // A token in the URL is not read either.
  expect((await act(undefined, {}, `?token=${approve}`)).status).toBe(400);
  expect((await fetch(`${base}/api/asks/${pickerId}/act`)).status).toBe(405);
  // No session, another site's Origin: the token decides, as the phone's.
  const answered = await act(JSON.stringify({ token: approve }), { origin: "https://elsewhere.example" });
  expect(answered.status).toBe(200);
  expect(await answered.json()).toMatchObject({ picker_id: pickerId, outcome: "selected", device_id: "phone" });
  const resolved = await laptop.waitFor((f) => f.type === "picker.resolved", 10_000);
  expect(resolved.payload).toMatchObject({ option_id: "approve", device_id: "phone", device_name: "phone" });
  expect((await act(JSON.stringify({ token: approve }))).status).toBe(200);
  expect((await act(JSON.stringify({ token: tabletDeny }))).status).toBe(410);
  // The tablet, which did not answer, is cleared once.
  const clears = () => ntfy!.requests.filter((r) => r.method === "PUT");
  await ntfy.until(() => clears().length > 0, "the tablet's clear");
  expect(clears().map((r) => r.url)).toEqual([`/alice-tablet/${pickerId}/clear`]);

  await server.stop();
  expect(server.output()).toMatch(/listening on/);
  for (const token of tokens) expect(server.output()).not.toContain(token);
  expect(server.output()).not.toContain(session);
}, 120_000);
