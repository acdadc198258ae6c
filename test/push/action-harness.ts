/**
 * A gateway whose pushes are recorded by a sender standing in for the push services, with the
 * act route (`createAskActionHandler`) on a real HTTP server, for the action-button tests of
 * docs/PROTOCOL.md §21.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Device, GatewayOptions, Owner, PushMessage, PushSender } from "chat-gateway";
import { createAskActionHandler } from "chat-gateway/doors";
import { startGateway, type Harness } from "../gateway/harness.js";

/** One push as the stand-in sender received it. */
export interface RecordedPush {
  owner: Owner;
  device_id: string;
  message: PushMessage;
}

export interface ActionHarness {
  h: Harness;
  pushes: RecordedPush[];
  /** `POST /api/asks/{id}/act` with this body: the status and the parsed answer. */
  act(pickerId: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Every line the gateway and the route logged. */
  logged: string[];
  close(): Promise<void>;
}

/** A sender named `rec` that records every push (devices declare `caps.push: "rec"`). */
export function recordingSender(pushes: RecordedPush[]): PushSender {
  return {
    name: "rec",
    accepts: () => true,
    async send(owner: Owner, device: Device, message: PushMessage) {
      pushes.push({ owner, device_id: device.device_id, message });
    },
  };
}

export async function actionHarness(options: Partial<GatewayOptions> = {}): Promise<ActionHarness> {
  const pushes: RecordedPush[] = [];
  const logged: string[] = [];
  const line =
    (level: string) =>
    (...parts: unknown[]) =>
      logged.push(
        `${level} ${parts.map((p) => (p instanceof Error ? `${p.message} ${p.stack}` : String(p))).join(" ")}`,
      );
  const logger = { info: line("info"), warn: line("warn"), error: line("error") };
  const h = await startGateway({
    push: [recordingSender(pushes)],
    pushAfterMs: 0,
    publicUrl: "https://chat.example.com",
    logger,
    ...options,
  });
  const handler = createAskActionHandler(h.gateway, { onError: line("route") });
  const server = http.createServer((req, res) => {
    logged.push(`request ${req.method} ${req.url}`);
    void handler(req, res).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    h,
    pushes,
    logged,
    async act(pickerId, body) {
      const response = await fetch(`${base}/api/asks/${pickerId}/act`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
    async close() {
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await h.close();
    },
  };
}

/** Polls until `check` holds (at most about 10 s). */
export async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!check()) throw new Error("timed out waiting");
}
