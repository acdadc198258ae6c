// --metrics-port (docs/PROTOCOL.md §18.3): the example server, as a process, serves GET /metrics in
// the Prometheus text format with the chat_gateway_ metrics and the process defaults, counting
// what devices did over the wire.
import WebSocket from "ws";
import { afterEach, expect, it } from "vitest";
import { Client } from "../gateway/harness.js";
import { startServerProcess, type ServerProcess } from "../example-server-process.js";
import { recordingServer } from "../push/recording-server.js";

let servers: ServerProcess[] = [];
afterEach(() => {
  for (const s of servers) s.child.kill("SIGKILL");
  servers = [];
});

/** Every sample line as name{labels} -> value. */
async function scrape(url: string): Promise<{ contentType: string; samples: Map<string, number>; text: string }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const text = await res.text();
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { contentType: res.headers.get("content-type") ?? "", samples, text };
}

it("metrics - GET /metrics counts connections, hellos, frames, turns and storage calls, with the process defaults", async () => {
  const server = await startServerProcess({ GATEWAY_METRICS_PORT: "0", GATEWAY_DEMO_DELAY_MS: "0" }, ["--memory"]);
  servers.push(server);
  const url = /metrics (http:\/\/[\d.]+:\d+\/metrics)/.exec(server.output())?.[1];
  expect(url, server.output()).toBeDefined();
  // Its own port, not the server's.
  expect(url!.startsWith(server.base)).toBe(false);

  const device = await Client.connect(server.ws);
  await device.say({ chat_id: "default", text: "hello metrics" });
  // A handshake refused: the first frame is not a hello.
  const refused = new WebSocket(server.ws);
  await new Promise((resolve) => refused.once("open", resolve));
  refused.send(JSON.stringify({ type: "ping", id: "p1", payload: {} }));
  await new Promise((resolve) => refused.once("close", resolve));

  const { contentType, samples, text } = await scrape(url!);
  expect(contentType).toContain("text/plain");
  expect(samples.get("chat_gateway_connections")).toBe(1);
  expect(samples.get("chat_gateway_connections_waiting")).toBe(0);
  expect(samples.get("chat_gateway_hellos_waiting")).toBe(0);
  expect(samples.get('chat_gateway_hellos_total{result="ok"}')).toBe(1);
  expect(samples.get('chat_gateway_hellos_total{result="refused"}')).toBe(1);
  expect(samples.get('chat_gateway_hellos_total{result="shed"}')).toBe(0);
  expect(samples.get('chat_gateway_frames_received_total{type="message.send"}')).toBe(1);
  expect(samples.get('chat_gateway_frames_received_total{type="hello"}')).toBe(1);
  expect(samples.get('chat_gateway_frames_sent_total{type="hello.ok"}')).toBe(1);
  expect(samples.get('chat_gateway_frames_sent_total{type="message.stop"}')).toBe(1);
  expect(samples.get("chat_gateway_turns_running")).toBe(0);
  expect(samples.get("chat_gateway_turns_waiting")).toBe(0);
  expect(samples.get("chat_gateway_turn_duration_seconds_count")).toBe(1);
  expect(samples.get('chat_gateway_storage_call_duration_seconds_count{op="commit"}')).toBeGreaterThan(0);
  expect(samples.has("chat_gateway_event_loop_delay_seconds_count")).toBe(true);
  expect(text).toContain("# TYPE chat_gateway_push_total counter");
  // prom-client's defaults.
  expect(samples.has("process_cpu_user_seconds_total")).toBe(true);
  expect(samples.has("nodejs_heap_size_used_bytes")).toBe(true);

  await device.close();
  expect((await fetch(url!.replace("/metrics", "/other"))).status).toBe(404);
}, 60_000);

it("metrics - chat_gateway_push_total counts the ntfy pushes the server delivered", async () => {
  const ntfy = await recordingServer();
  try {
    const server = await startServerProcess(
      { GATEWAY_METRICS_PORT: "0", GATEWAY_DEMO_DELAY_MS: "200", GATEWAY_NTFY_URL: ntfy.url },
      ["--memory"],
    );
    servers.push(server);
    const url = /metrics (http:\/\/[\d.]+:\d+\/metrics)/.exec(server.output())?.[1];
    expect(url, server.output()).toBeDefined();
    const phone = await Client.connect(server.ws, { device_id: "phone", caps: { push: "ntfy" }, ntfy_topic: "away-1" });
    // Asked, then gone before the answer: the answer is pushed at once (docs/PROTOCOL.md §15.2).
    phone.send("message.send", { chat_id: "default", text: "answer me while I am away" });
    await phone.waitFor((f) => f.type === "message");
    await phone.close();
    const delivered = async () => (await scrape(url!)).samples.get('chat_gateway_push_total{kind="ntfy",result="ok"}');
    for (let i = 0; i < 300 && (await delivered()) !== 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(ntfy.requests.map((r) => r.url)).toEqual(["/away-1"]);
    expect(await delivered()).toBe(1);
  } finally {
    await ntfy.close();
  }
}, 60_000);
