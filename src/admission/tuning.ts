/**
 * The tuned constants of admission (docs/PROTOCOL.md §18.5), in one table: each with its value, its
 * unit, what it trades, and the bench run that chose it. The benches are `bench/capacity.ts` (a
 * reconnect storm of N devices against the gateway and a bare ws server, with a probe device's
 * ping); the runs are written up in `bench/NOTES.md` under the heading named. Change one only with
 * a run of that bench before and after.
 * @module
 */

/** One tuned constant. */
export interface Tuned {
  readonly value: number;
  /** `ms`, `chars`, `devices` (a share of one device's event-loop time), `share` (of a whole) or `count`. */
  readonly unit: "ms" | "chars" | "devices" | "share" | "count";
  /** What a larger value buys, and what it costs. */
  readonly trades: string;
  /** The bench and the `bench/NOTES.md` heading of the run that measured it. */
  readonly measured: string;
}

const STORM = "bench/capacity.ts";

/** The constants, by the name the code uses. */
export const TUNING = {
  minHintMs: {
    value: 200,
    unit: "ms",
    trades: "the shortest retry hint: lower brings a shed device back sooner, but into a gate still full",
    measured: `${STORM}, "h/cap" (reaching the capacity targets)`,
  },
  maxHintMs: {
    value: 30_000,
    unit: "ms",
    trades: "the longest retry hint: a storm the process cannot measure well still ends within it",
    measured: `${STORM}, "Waiting for room": first-wave hints reached it (storm 49.2 s) before the queue`,
  },
  firstGuessMs: {
    value: 1,
    unit: "ms",
    trades:
      "a device's loop time before one was measured under load: a restarted, cold process sheds its storm with it; 0.25 made the storm 41.1 s (hints to 25 s)",
    measured: `${STORM} BENCH_MAX_HELLOS=64, "Waiting for room", the refused devices' hints`,
  },
  firstDurationMs: {
    value: 100,
    unit: "ms",
    trades: "a hello's duration before one ended: spaces the first hints when hellos wait on a slow authenticator",
    measured: `${STORM}, "h/cap" (Little's law hints, commit 05c2d52)`,
  },
  durationWeight: {
    value: 1 / 32,
    unit: "share",
    trades: "the newest hello's weight in the mean duration: higher follows a slower authenticator sooner, and jitters",
    measured: `${STORM}, "h/cap"`,
  },
  windowMs: {
    value: 250,
    unit: "ms",
    trades: "the window the loop's cost per device is measured over: shorter reacts sooner, with noisier samples",
    measured: `${STORM}, "h/cap" (learning from every window, commit ae7a04d)`,
  },
  minUnits: {
    value: 8,
    unit: "devices",
    trades: "a window with fewer devices (weighted) is not learnt from: fewer let a few devices' fixed costs look dear",
    measured: `${STORM}, "h/cap"`,
  },
  openWeight: {
    value: 0.3,
    unit: "devices",
    trades:
      "a taken connection's share of a device (accept, HTTP, upgrade; the hello is the rest): counted at open, so an upgraded burst does not make hellos look dear",
    measured: `${STORM} --cpu-prof, "h/cap": at 5,000 devices the hints had stretched to 13 s without it`,
  },
  shedWeight: {
    value: 0.15,
    unit: "devices",
    trades: "a hello shed after its upgrade (an error frame and a close), beyond its open",
    measured: `${STORM} --cpu-prof, "h/cap"`,
  },
  arrivalWeight: {
    value: 0.2,
    unit: "devices",
    trades:
      "a connection handed over before its upgrade (accept, HTTP parse), counted on arrival: hints 23 to 29 s instead of 41 to 48 s at maxHellosInFlight 64",
    measured: `${STORM} BENCH_MAX_HELLOS=64, "Waiting for room", the refused devices' hints`,
  },
  upgradeShedWeight: {
    value: 0.05,
    unit: "devices",
    trades: "a refusal before the upgrade, beyond its arrival: a short answer and a close",
    measured: `${STORM} BENCH_MAX_HELLOS=64, "Waiting for room"`,
  },
  pendingMs: {
    value: 2_000,
    unit: "ms",
    trades:
      "how long a taken connection counts as on its way to its hello: at 1,000, 220 to 500 of a 15,000-device storm were shed at their hello; at 2,000 none, and an idle socket holds the door at most that long",
    measured: `${STORM} BENCH_MEMORY_DETAIL, BENCH_MAX_HELLOS, "Waiting for room", "Two seconds, not one"`,
  },
  bucketMs: {
    value: 250,
    unit: "ms",
    trades: "the granularity the pending connections age in (pendingMs / bucketMs buckets): finer costs more slots",
    measured: `${STORM}, "Waiting for room"`,
  },
  waitingPerPlace: {
    value: 2,
    unit: "count",
    trades:
      "hellos waiting, and connections on their way, per place: at 4 far devices came in faster (8.9 s) but a loopback storm's ping p99 rose to 42 to 52 ms; at 2, 28 to 32 ms",
    measured: `${STORM} BENCH_HELLO_DELAY_MS=200, "Far devices: hellos a round trip after the upgrade"`,
  },
  waitingHelloMaxChars: {
    value: 16_384,
    unit: "chars",
    trades: "a longer hello is shed rather than held waiting for a place: those waiting hold little memory",
    measured: `${STORM}, "Far devices" (a hello of the bench is under 1 kB)`,
  },
  busy: {
    value: 0.5,
    unit: "share",
    trades:
      "the loop's busy share below which a window teaches nothing of the cost: on a loop with time to spare its fixed work made a device look two to three times dearer",
    measured: `${STORM} BENCH_MAX_HELLOS=64, "Waiting for room", the refused devices' hints`,
  },
  costWeight: {
    value: 1 / 4,
    unit: "share",
    trades:
      "the newest window's weight in the mean cost (one window at most doubles it): higher follows a slowdown sooner; one 315 ms window of 28 devices had tripled it",
    measured: `${STORM} BENCH_MAX_HELLOS=64, "Waiting for room"`,
  },
  queueTickMs: {
    value: 250,
    unit: "ms",
    trades: "how often the upgrade queue looks again while it holds anyone: the pending count ages by bucketMs",
    measured: `${STORM}, "Waiting for room", "Holding the upgrade until there is room"`,
  },
  takenPerTurn: {
    value: 8,
    unit: "count",
    trades:
      "waiting connections upgraded per turn of the event loop: a turn that upgraded a whole gate's worth (256) held every connection already in for tens of milliseconds",
    measured: `${STORM}, "Waiting for room" (the probe's ping)`,
  },
} as const satisfies Record<string, Tuned>;
