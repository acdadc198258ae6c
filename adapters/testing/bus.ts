// The Bus conformance suite, exported by "chat-gateway/testing".
import { beforeEach, describe, expect, test } from "vitest";
import type { Bus, BusMessage, OutgoingFrame } from "chat-gateway";
import { eachTest, type Current } from "./under-test.js";
import { sleep, until } from "./wait.js";

/** A bus under test: the bus, optionally a second one on the same medium, and the clean-up. */
export interface BusUnderTest {
  bus: Bus;
  /**
   * A second bus sharing the medium, as another gateway process would have (a Redis bus on
   * another client with the same prefix). Without it the cross-process tests use `bus` itself.
   */
  peer?: Bus;
  /** Runs after both buses are closed, once per test. */
  cleanup?: () => Promise<void>;
}

/**
 * Makes the bus for one test: called before every test, it must return a bus (or a
 * {@link BusUnderTest}) that shares no subscribers or frames with the ones it made before (a new
 * key prefix on Redis), with its links up (a Redis bus once `await bus.ready()` resolved): a bus
 * may drop live frames published while its link is still connecting, and the suite counts every
 * frame. The suite calls `close()` on each bus after the test.
 */
export type BusFactory = () => Bus | BusUnderTest | Promise<Bus | BusUnderTest>;

/** Frames one subscriber received, in arrival order. */
function recorder(bus: Bus, owner: string): { got: BusMessage[]; stop: () => void } {
  const got: BusMessage[] = [];
  const stop = bus.subscribe(owner, (message) => got.push(message));
  return { got, stop };
}

function frame(i: number): OutgoingFrame {
  return {
    type: "message.update",
    payload: { i, text: `update ${i}`, nested: { list: [i, "é🎉"] } },
    ...(i % 3 === 0 ? { seq: i + 1 } : {}),
  };
}

/** Subscribes have taken effect in this bus and its peer (a no-op for a bus without `ready`). */
async function ready(owner: string, ...buses: Bus[]): Promise<void> {
  await Promise.all(buses.map((bus) => bus.ready?.(owner)));
}

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link Bus} contract for
 * one implementation, inside a `describe("bus conformance: <name>")` block. Call it at the top
 * level of a test file:
 *
 * ```ts
 * import { describeBusConformance } from "chat-gateway/testing";
 * import { myBus } from "./my-bus.js";
 * describeBusConformance("my bus", () => ({ bus: myBus(), peer: myBus() }));
 * ```
 *
 * What it checks:
 * - order: frames published for one owner reach each of its subscribers in publish order, once
 *   each, with type, payload, `seq` and `except` intact;
 * - owners: a subscriber gets only its owner's frames, also for owner ids such as `*`, `a:b` or
 *   one that is a prefix of another;
 * - subscriptions: unsubscribing stops that listener only and may be called twice; a subscriber
 *   added later gets every frame published once `ready(owner)` resolved and none from before;
 *   publishing for an owner nobody follows is quietly dropped;
 * - processes: frames published on the peer reach this bus's subscribers in order and once each,
 *   and `connected(owner)`, when implemented, tells whether any process has a subscriber;
 * - close: `close()` resolves, also when called twice.
 *
 * @param name Shown in the test names, e.g. `"redis"`.
 * @param make Makes the bus (and its peer) for one test; see {@link BusFactory}.
 */
export function describeBusConformance(name: string, make: BusFactory): void {
  describe(`bus conformance: ${name}`, () => {
    const current = eachTest<"bus", Bus>(
      "bus",
      make,
      (made): made is Bus => "publish" in made,
      (bus) => bus.close?.(),
    );
    let bus: Bus;
    beforeEach(() => {
      bus = current.value;
    });

    test("order - frames for one owner reach every subscriber in publish order, once each, intact", async () => {
      const first = recorder(bus, "alice");
      const second = recorder(bus, "alice");
      await ready("alice", bus);
      const sent: BusMessage[] = Array.from({ length: 300 }, (_, i) => ({
        owner: "alice",
        frame: frame(i),
        ...(i % 7 === 0 ? { except: `conn-${i}` } : {}),
      }));
      for (const message of sent) bus.publish(message);
      await until(() => first.got.length >= 300 && second.got.length >= 300, "300 frames on both subscribers", 10_000);
      await sleep(50);
      expect(first.got).toEqual(sent);
      expect(second.got).toEqual(sent);
    });

    test("owners - a subscriber gets only its own owner's frames, whatever the owner id", async () => {
      const owners = ["alice", "alice2", "ali", "*", "a:b", "{alice}"];
      const recorders = owners.map((owner) => recorder(bus, owner));
      await ready("alice", bus);
      await Promise.all(owners.map((owner) => ready(owner, bus)));
      for (let round = 0; round < 3; round++)
        for (const owner of owners) bus.publish({ owner, frame: { type: "typing", payload: { owner, round } } });
      await until(() => recorders.every((r) => r.got.length >= 3), "3 frames for every owner");
      await sleep(50);
      for (const [i, owner] of owners.entries()) {
        expect(recorders[i].got.map((m) => m.frame.payload)).toEqual([0, 1, 2].map((round) => ({ owner, round })));
        expect(recorders[i].got.every((m) => m.owner === owner)).toBe(true);
      }
    });

    test("unsubscribe - stops that listener only, and calling it twice is harmless", async () => {
      const leaving = recorder(bus, "alice");
      const staying = recorder(bus, "alice");
      await ready("alice", bus);
      bus.publish({ owner: "alice", frame: frame(1) });
      await until(() => leaving.got.length === 1 && staying.got.length === 1, "the first frame");
      leaving.stop();
      leaving.stop();
      bus.publish({ owner: "alice", frame: frame(2) });
      await until(() => staying.got.length === 2, "the second frame");
      await sleep(50);
      expect(leaving.got.map((m) => m.frame)).toEqual([frame(1)]);
      expect(staying.got.map((m) => m.frame)).toEqual([frame(1), frame(2)]);
    });

    test("subscribe - a later subscriber gets what is published once ready(owner) resolved, nothing from before", async () => {
      bus.publish({ owner: "carol", frame: frame(1) });
      await sleep(50);
      const late = recorder(bus, "carol");
      await ready("carol", bus);
      bus.publish({ owner: "carol", frame: frame(2) });
      bus.publish({ owner: "nobody-listens", frame: frame(3) });
      await until(() => late.got.length >= 1, "the frame published after ready");
      await sleep(50);
      expect(late.got.map((m) => m.frame)).toEqual([frame(2)]);
      late.stop();
      const again = recorder(bus, "carol");
      await ready("carol", bus);
      bus.publish({ owner: "carol", frame: frame(4) });
      await until(() => again.got.length >= 1, "the frame after subscribing again");
      expect(again.got.map((m) => m.frame)).toEqual([frame(4)]);
    });

    describeProcessTests(current);
  });
}

/** The tests across the bus and its peer, and close. */
function describeProcessTests(current: Current<Bus>): void {
  let bus: Bus;
  let peer: Bus;
  beforeEach(() => {
    ({ value: bus, peer } = current);
  });

  test("processes - frames published on the peer reach this bus's subscribers in order, once each", async () => {
    const here = recorder(bus, "dave");
    const there = recorder(peer, "dave");
    await ready("dave", bus, peer);
    const sent = Array.from({ length: 200 }, (_, i) => ({
      owner: "dave",
      frame: frame(i),
      ...(i === 5 ? { except: "conn-5" } : {}),
    }));
    for (const message of sent) peer.publish(message);
    await until(() => here.got.length >= 200 && there.got.length >= 200, "200 frames in both processes", 10_000);
    await sleep(100);
    expect(here.got.map((m) => m.frame)).toEqual(sent.map((m) => m.frame));
    expect(here.got.every((m) => m.owner === "dave")).toBe(true);
    expect(there.got).toEqual(sent);
  });

  test("processes - connected(owner), when implemented, is true while any process has a subscriber", async () => {
    const buses = [bus, peer].filter((b) => typeof b.connected === "function");
    for (const b of buses) expect(await b.connected!("erin")).toBe(false);
    const sub = recorder(peer, "erin");
    await ready("erin", peer);
    for (const b of buses) await until(() => b.connected!("erin"), "connected(erin) to be true");
    sub.stop();
    for (const b of buses) await until(async () => !(await b.connected!("erin")), "connected(erin) to be false");
  });

  test("close - resolves, also when called twice", async () => {
    recorder(bus, "frank");
    await ready("frank", bus);
    await bus.close?.();
    await bus.close?.();
  });
}
