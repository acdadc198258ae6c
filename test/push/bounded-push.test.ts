// Push senders against hostile push services (docs/PROTOCOL.md §6, §16.1): a Web Push endpoint is
// any https URL a device names, so every sender bounds each request in time (connect, headers
// and body together) and in the bytes of the answer it reads, and bounds its pushes in flight per
// target and in all, without a queue, so that one target cannot hold up the others. The services
// are real sockets on 127.0.0.1 (test/push/hostile-push-service.ts).
import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it, type TestContext } from "vitest";
import { ANONYMOUS_OWNER, type Device, type PushSender } from "chat-gateway";
import { fcmPushSender } from "chat-gateway/push/fcm";
import { ntfyPushSender } from "chat-gateway/push/ntfy";
import { generateVapidKeys, webPushSender } from "chat-gateway/push/webpush";
import { sleep } from "../gateway/runtimes.js";
import { subscriber } from "./fake-push-service.js";
import { hostilePushService, type HostilePushService } from "./hostile-push-service.js";

const PRIVATE_PEM = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
  type: "pkcs8",
  format: "pem",
}) as string;
const VAPID = generateVapidKeys();
/** Long enough for a loopback push on a loaded machine; a dripping answer is cut off at it. */
const TIMEOUT_MS = 4_000;
const MESSAGE = { kind: "notification", title: "t", body: "b" } as const;

type Limits = { maxInFlight?: number; maxInFlightPerTarget?: number };

interface Kind {
  protocol: "http" | "https";
  /** A sender posting to `service`; `mode` is how the service answers where the mode is not the target's. */
  sender(service: HostilePushService, mode: string, limits?: Limits): PushSender;
  /** A device whose target `mode` answers as that mode; `n` tells targets of one mode apart. */
  device(service: HostilePushService, mode: string, n?: number): Device;
  /** True when the mode is a property of the target, not of the sender. */
  modeByTarget: boolean;
}

const base = (id: string, push: string): Device => ({
  device_id: id,
  device_name: "",
  caps: { min_protocol: 1, media: true, push, streaming: true },
  last_seen: 0,
});

const KINDS: Record<string, Kind> = {
  webpush: {
    protocol: "https",
    sender: (service, _mode, limits) =>
      webPushSender({
        vapid: VAPID,
        subject: "mailto:ops@example.com",
        agent: service.agent,
        endpointAllowed: () => true,
        timeoutMs: TIMEOUT_MS,
        ...limits,
      }),
    device: (service, mode, n = 1) => ({
      ...base(`tab-${n}`, "webpush"),
      webpush: subscriber(`${service.url}/${mode}/sub-${n}`).subscription,
    }),
    modeByTarget: true,
  },
  ntfy: {
    protocol: "http",
    sender: (service, _mode, limits) => ntfyPushSender({ baseUrl: service.url, timeoutMs: TIMEOUT_MS, ...limits }),
    device: (_service, mode, n = 1) => ({ ...base(`phone-${n}`, "ntfy"), ntfy_topic: n === 1 ? mode : `${mode}${n}` }),
    modeByTarget: true,
  },
  fcm: {
    protocol: "http",
    sender: (service, mode, limits) =>
      fcmPushSender({
        serviceAccount: {
          project_id: "demo",
          client_email: "push@demo.iam.gserviceaccount.com",
          private_key: PRIVATE_PEM,
          token_uri: `${service.url}/token`,
        },
        apiBaseUrl: `${service.url}/${mode}`,
        timeoutMs: TIMEOUT_MS,
        ...limits,
      }),
    device: (_service, _mode, n = 1) => ({ ...base(`android-${n}`, "fcm"), fcm_token: `token-${n}` }),
    modeByTarget: false,
  },
};

/** A service of `kind`'s protocol for the test of `context`, closed when that test ends. */
async function serviceFor(kind: Kind, context: TestContext): Promise<HostilePushService> {
  const service = await hostilePushService(kind.protocol);
  // The context's hook: tests here run at once, and the global one would not know whose test it is.
  context.onTestFinished(() => service.close());
  return service;
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await sleep(10);
}

/** The push, and whether it has settled yet. */
function track(push: Promise<void>): { push: Promise<void>; settled: () => boolean } {
  let settled = false;
  push.then(
    () => (settled = true),
    () => (settled = true),
  );
  return { push, settled: () => settled };
}

// Each test has its own service and sender, and mostly waits for a deadline: they run at once.
describe.concurrent.each(Object.entries(KINDS))("%s", (name, kind) => {
  it(`bounded push - ${name}: an answer whose body never ends is cut off after a few KiB and the push fails with its status`, async (context) => {
    const service = await serviceFor(kind, context);
    const sender = kind.sender(service, "endless");
    await expect(sender.send(ANONYMOUS_OWNER, kind.device(service, "endless"), MESSAGE)).rejects.toMatchObject({
      permanent: false,
      message: expect.stringMatching(/answered 503: x+$/),
    });
    // The connection is closed by the sender, not left pouring into memory.
    await until(() => service.cutOff.length === 1);
    expect(service.cutOff).toHaveLength(1);
  }, 60_000);

  it(`bounded push - ${name}: an answer that drips a byte a second fails at the request's deadline`, async (context) => {
    const service = await serviceFor(kind, context);
    const sender = kind.sender(service, "drip");
    await expect(sender.send(ANONYMOUS_OWNER, kind.device(service, "drip"), MESSAGE)).rejects.toMatchObject({
      permanent: false,
      message: expect.stringContaining(`no complete answer within ${TIMEOUT_MS} ms`),
    });
    await until(() => service.cutOff.length === 1);
    expect(service.cutOff).toHaveLength(1);
  }, 60_000);

  it(`bounded push - ${name}: pushes in flight are bounded per target and in all, failing at once over the bound`, async (context) => {
    const service = await serviceFor(kind, context);
    const sender = kind.sender(service, "drip", { maxInFlightPerTarget: 1, maxInFlight: 2 });
    const first = track(sender.send(ANONYMOUS_OWNER, kind.device(service, "drip", 1), MESSAGE));
    await expect(sender.send(ANONYMOUS_OWNER, kind.device(service, "drip", 1), MESSAGE)).rejects.toMatchObject({
      permanent: false,
      message: expect.stringMatching(/too many pushes in flight \(1 to this target\)/),
    });
    const second = track(sender.send(ANONYMOUS_OWNER, kind.device(service, "drip", 2), MESSAGE));
    await expect(sender.send(ANONYMOUS_OWNER, kind.device(service, "drip", 3), MESSAGE)).rejects.toMatchObject({
      message: expect.stringMatching(/too many pushes in flight \(2 in all\)/),
    });
    // Refused before the pushes in flight ended: nothing waited behind them.
    expect([first.settled(), second.settled()]).toEqual([false, false]);
    await expect(first.push).rejects.toThrow(/no complete answer/);
    await expect(second.push).rejects.toThrow(/no complete answer/);
    // Their places are free again.
    await expect(sender.send(ANONYMOUS_OWNER, kind.device(service, "drip", 1), MESSAGE)).rejects.toThrow(
      /no complete answer/,
    );
  }, 60_000);

  // FCM sends every target through one service address, so it has no "other target" to reach.
  if (kind.modeByTarget)
    it(`bounded push - ${name}: a push to another target completes while one to a dripping target waits`, async (context) => {
      const service = await serviceFor(kind, context);
      const sender = kind.sender(service, "ok");
      const stuck = track(sender.send(ANONYMOUS_OWNER, kind.device(service, "drip"), MESSAGE));
      await until(() => service.paths.length === 1);
      await sender.send(ANONYMOUS_OWNER, kind.device(service, "ok", 2), MESSAGE);
      expect(stuck.settled()).toBe(false);
      await expect(stuck.push).rejects.toThrow(/no complete answer/);
    }, 60_000);
});
