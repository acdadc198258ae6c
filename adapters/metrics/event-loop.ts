import { Histogram, type Registry } from "prom-client";

/** How often the event loop's delay is sampled (ms). */
const SAMPLE_EVERY_MS = 500;
/** Buckets of the delay (seconds): fine to badly blocked. */
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * `chat_gateway_event_loop_delay_seconds`: every half second, how late a timer fired. One timer,
 * unref'd, so it costs nothing measurable and never keeps the process alive.
 */
export function sampleEventLoop(registry: Registry): { stop(): void } {
  const delay = new Histogram({
    name: "chat_gateway_event_loop_delay_seconds",
    help: "How late a timer fired, sampled every 0.5 s, seconds.",
    buckets: BUCKETS,
    registers: [registry],
  });
  let expected = performance.now() + SAMPLE_EVERY_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    delay.observe(Math.max(0, now - expected) / 1000);
    expected = now + SAMPLE_EVERY_MS;
  }, SAMPLE_EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
