// A push target that keeps failing (docs/PROTOCOL.md §6), through a real gateway and the Web Push
// sender posting to a push service on https://127.0.0.1: after a failed push the target rests
// (one minute, doubling), pushes meanwhile are skipped, and after five failed pushes in a row the
// subscription is dropped from its device. Time is the gateway's clock, moved by hand.
import { afterEach, expect, it } from "vitest";
import { ANONYMOUS_OWNER } from "chat-gateway";
import { gatewayMetrics } from "chat-gateway/metrics";
import { generateVapidKeys, webPushSender } from "chat-gateway/push/webpush";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "../gateway/harness.js";
import { sleep } from "../gateway/runtimes.js";
import { recordingLogger } from "../fixtures/recording-logger.js";
import { fakePushService, subscriber, type FakePushService } from "./fake-push-service.js";

let h: Harness | undefined;
let service: FakePushService | undefined;
afterEach(async () => {
  await h?.close();
  await service?.close();
  h = service = undefined;
});

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1000 && !(await check()); i++) await sleep(10);
}

it("failing target - a target that keeps failing rests between pushes, doubling, and is dropped after five failed pushes", async () => {
  service = await fakePushService();
  let clock = Date.now();
  const storage = memoryStorage();
  const push = webPushSender({
    vapid: generateVapidKeys(),
    subject: "mailto:ops@example.com",
    agent: service.agent,
    endpointAllowed: () => true,
  });
  const logger = recordingLogger();
  h = await startGateway({
    storage,
    logger,
    push: [push],
    pushRetry: { attempts: 0, backoffMs: 10 },
    now: () => clock,
  });
  const browser = subscriber(`${service.url}/push/failing`);
  service.answer("/push/failing", 503);
  const tab = await Client.connect(h.url, {
    device_id: "tab",
    caps: { push: "webpush" },
    webpush: browser.subscription,
  });
  await tab.close();
  const titles = () => service!.requests.map((r) => JSON.parse(browser.decrypt(r.body)).title as string);
  const notify = (title: string) =>
    h!.gateway.notify(ANONYMOUS_OWNER, { kind: "generic", title, body: "b", chat_id: "default" });
  const failedPushes = () =>
    logger.lines.warn.filter((l) => /^push via webpush to device tab .* failed/.test(l)).length;

  const skipped = () => logger.lines.info.filter((l) => /^push via webpush to device tab .* skipped/.test(l)).length;

  await notify("n1");
  await until(() => failedPushes() === 1);
  let rest = 60_000;
  for (const [i, title] of ["n2", "n3", "n4", "n5"].entries()) {
    // A second before the rest ends: skipped; at its end: tried, failing again.
    clock += rest - 1_000;
    await notify("early");
    await until(() => skipped() === i + 1);
    clock += 1_000;
    await notify(title);
    await until(() => failedPushes() === i + 2);
    rest *= 2;
  }
  await until(async () => (await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush === undefined);
  expect((await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush).toBeUndefined();
  expect(titles()).toEqual(["n1", "n2", "n3", "n4", "n5"]);
}, 60_000);

it("failing target - a sender counted for metrics still drops a gone subscription (its forget is kept)", async () => {
  service = await fakePushService();
  const metrics = gatewayMetrics({ defaultMetrics: false });
  const storage = memoryStorage();
  const push = metrics.push(
    webPushSender({
      vapid: generateVapidKeys(),
      subject: "mailto:ops@example.com",
      agent: service.agent,
      endpointAllowed: () => true,
    }),
  );
  h = await startGateway({ storage, push: [push], pushRetry: { attempts: 0, backoffMs: 10 } });
  service.answer("/push/gone", 410);
  const browser = subscriber(`${service.url}/push/gone`);
  const tab = await Client.connect(h.url, {
    device_id: "tab",
    caps: { push: "webpush" },
    webpush: browser.subscription,
  });
  await tab.close();
  await h.gateway.notify(ANONYMOUS_OWNER, { kind: "generic", title: "t", body: "b", chat_id: "default" });
  await until(async () => (await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush === undefined);
  expect((await storage.getDevice(ANONYMOUS_OWNER, "tab"))?.webpush).toBeUndefined();
  expect(await metrics.metrics()).toContain('chat_gateway_push_total{kind="webpush",result="failed"} 1');
  metrics.close();
}, 60_000);
