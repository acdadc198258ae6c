// Admission on a manual clock (docs/PROTOCOL.md §18.5, §2.4): which connection is taken, held,
// refused or shed, in what order, and when the clock says so. No socket: the transport's side is
// the request's take and refuse, the session's is the per-connection interface.
import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { Admission, type AdmissionOptions } from "../../src/admission/admission.js";
import type { ConnectionAdmission } from "../../src/admission/connection-admission.js";
import { TUNING } from "../../src/admission/tuning.js";
import { KeyedBuckets } from "../../src/connection/shared-budgets.js";
import { manualClock, type ManualClock } from "chat-gateway/testing";

function admission(clock: ManualClock, options: Partial<AdmissionOptions> = {}) {
  const shed: number[] = [];
  const made = new Admission({
    maxHellosInFlight: 1,
    maxConnectionsWaiting: 10,
    maxConnectionsPerIp: 10,
    helloTimeoutMs: 10_000,
    connects: { take: () => true },
    shed: () => void shed.push(clock.now()),
    failed: (error) => {
      throw error;
    },
    clock,
    ...options,
  });
  return { admission: made, shed };
}

/** A transport's request: taking it opens the connection's admission, as `gateway.accept` does. */
function transport(admission: Admission) {
  const log: string[] = [];
  const open = new Map<string, ConnectionAdmission>();
  const request = (name: string, extra: { address?: string; maxWaitMs?: number } = {}) =>
    admission.admit({
      ...extra,
      take: () => {
        log.push(`take ${name}`);
        const connection = admission.connection();
        connection.open(extra.address);
        open.set(name, connection);
      },
      refuse: (ms) => void log.push(`refuse ${name} ${ms >= TUNING.minHintMs.value ? "hinted" : ms}`),
    });
  return { log, open, request };
}

/** The connection's hello comes, holds its place, and ends. */
function helloDone(connection: ConnectionAdmission): void {
  connection.firstFrame();
  expect(connection.enter(100)).toBe(true);
  connection.helloEnded();
}

describe("admission on a manual clock", () => {
  it("queue - takes while there is room, holds the rest in arrival order, takes the next when a hello ends", async () => {
    const clock = manualClock();
    const { admission: a } = admission(clock);
    const t = transport(a);
    // One place; taken connections on their way to a hello count up to twice the places.
    for (const name of ["a", "b", "c", "d"]) t.request(name);
    expect(t.log).toEqual(["take a", "take b"]);
    expect(a.waiting().connections).toBe(2);

    helloDone(t.open.get("a")!);
    await nextTurn();
    expect(t.log).toEqual(["take a", "take b", "take c"]);
    helloDone(t.open.get("b")!);
    await nextTurn();
    expect(t.log).toEqual(["take a", "take b", "take c", "take d"]);
    expect(a.waiting().connections).toBe(0);
  });

  it("queue - a socket that never sends its first frame keeps the door shut two seconds at most", async () => {
    const clock = manualClock();
    const { admission: a } = admission(clock);
    const t = transport(a);
    t.request("a");
    t.request("b");
    t.request("c");
    expect(t.log).toEqual(["take a", "take b"]);
    // a and b stay silent: c waits while they count as on their way, then the clock ages them out.
    clock.advance(TUNING.pendingMs.value - TUNING.bucketMs.value);
    await nextTurn();
    expect(t.log).toEqual(["take a", "take b"]);
    clock.advance(2 * TUNING.bucketMs.value);
    await nextTurn();
    expect(t.log).toEqual(["take a", "take b", "take c"]);
  });

  it("queue - a connection waiting past its maxWaitMs is refused with a hint, and counted as shed", async () => {
    const clock = manualClock();
    const { admission: a, shed } = admission(clock);
    const t = transport(a);
    t.request("a");
    t.request("b");
    t.request("c", { maxWaitMs: 500 });
    t.request("d", { maxWaitMs: 5_000 });
    clock.advance(400);
    await nextTurn();
    expect(t.log).toEqual(["take a", "take b"]);
    clock.advance(TUNING.queueTickMs.value);
    await nextTurn();
    expect(t.log).toEqual(["take a", "take b", "refuse c hinted"]);
    expect(shed).toHaveLength(1);
    expect(a.waiting().connections).toBe(1);
  });

  it("queue - past maxConnectionsWaiting, or maxConnectionsPerIp of one address waiting, it refuses at once", () => {
    const clock = manualClock();
    const { admission: a } = admission(clock, { maxConnectionsWaiting: 2, maxConnectionsPerIp: 1 });
    const t = transport(a);
    t.request("a");
    t.request("b");
    t.request("c", { address: "2001:db8:1:2::7" });
    t.request("d", { address: "2001:db8:1:2::8" }); // the same /64
    t.request("e");
    t.request("f");
    expect(t.log).toEqual(["take a", "take b", "refuse d hinted", "refuse f hinted"]);
  });

  it("queue - close refuses those waiting and every later one", () => {
    const clock = manualClock();
    const { admission: a } = admission(clock);
    const t = transport(a);
    for (const name of ["a", "b", "c"]) t.request(name);
    a.close();
    t.request("d");
    expect(t.log).toEqual(["take a", "take b", "refuse c hinted", "refuse d hinted"]);
    expect(clock.pending).toBe(0);
  });

  it("hello places - a hello past the places waits its turn in order; past twice the places, or too long, it is shed", async () => {
    const clock = manualClock();
    const { admission: a } = admission(clock, { maxHellosInFlight: 1 });
    const connections = Array.from({ length: 5 }, () => a.connection());
    for (const c of connections) c.open(undefined);
    for (const c of connections) c.firstFrame();
    expect(connections[0].enter(100)).toBe(true);
    expect(connections[0].waiting).toBe(false);
    expect(connections[1].enter(100)).toBe(true);
    expect(connections[2].enter(100)).toBe(true);
    expect([connections[1].waiting, connections[2].waiting]).toEqual([true, true]);
    expect(connections[3].enter(100)).toBe(false); // two waiting per place already
    expect(a.waiting().hellos).toBe(2);
    const order: number[] = [];
    void connections[1].waitForPlace(() => false).then(() => order.push(1));
    void connections[2].waitForPlace(() => false).then(() => order.push(2));
    connections[0].helloEnded();
    await nextTurn();
    expect(order).toEqual([1]);
    connections[1].closed();
    await nextTurn();
    expect(order).toEqual([1, 2]);
    const long = connections[4];
    connections[2].helloEnded();
    expect(a.connection().enter(100)).toBe(true); // the place is free again
    expect(long.enter(TUNING.waitingHelloMaxChars.value + 1)).toBe(false); // full, and too long to wait
  });

  it("hints - the shed are given places one share apart, never sooner than the least hint", () => {
    const clock = manualClock();
    const { admission: a } = admission(clock, { maxHellosInFlight: 4 });
    const pass = a.connection();
    // Before anything was measured a place is the first guess of a hello's duration over the places.
    const share = TUNING.firstDurationMs.value / 4;
    const hints = [pass.retryAfterMs(), pass.retryAfterMs(), pass.retryAfterMs()];
    expect(hints).toEqual([TUNING.minHintMs.value, TUNING.minHintMs.value + share, TUNING.minHintMs.value + 2 * share]);
    // Later, the virtual queue has moved on with the clock: the next is the least hint again.
    clock.advance(10_000);
    expect(pass.retryAfterMs()).toBe(TUNING.minHintMs.value);
  });

  it("addresses - maxConnectionsPerIp per /64 and the connect rate per address, each refusing with its reason", () => {
    const clock = manualClock();
    const connects = new KeyedBuckets({ perSecond: 1, burst: 3 }, clock.now);
    const { admission: a } = admission(clock, { maxConnectionsPerIp: 2, connects });
    const first = a.connection();
    expect(first.open("2001:db8:1:2::1")).toBeUndefined();
    expect(first.address).toBe("2001:db8:1:2::/64");
    expect(a.connection().open("2001:db8:1:2::2")).toBeUndefined();
    expect(a.connection().open("2001:db8:1:2::3")).toMatch(/at most 2/);
    first.closed();
    first.closed(); // once only
    // Room again for the address, but its three new connections spent the connect budget.
    expect(a.connection().open("2001:db8:1:2::4")).toMatch(/too many new connections/);
    clock.advance(1_000);
    expect(a.connection().open("2001:db8:1:2::4")).toBeUndefined();
    clock.advance(1_000);
    expect(a.connection().open("2001:db8:1:2::5")).toMatch(/at most 2/);
  });
});
