import { describe, expect, it } from "vitest";
import { LoginLockout } from "../../adapters/http/lockout.js";

const S = 1000;

function failTimes(lockout: LoginLockout, ip: string, times: number[]): boolean[] {
  return times.map((t) => lockout.fail(ip, t));
}

describe("lockout", () => {
  it("the 10th failure within 300 s locks the IP for 900 s and clears its list", () => {
    const lockout = new LoginLockout();
    const started = failTimes(
      lockout,
      "1.2.3.4",
      [0, 10, 20, 30, 40, 50, 60, 70, 80, 299].map((s) => s * S),
    );
    expect(started).toEqual([false, false, false, false, false, false, false, false, false, true]);
    expect(lockout.check("1.2.3.4", 299 * S)).toEqual({ locked: true, retryAfter: 900 });
    expect(lockout.check("1.2.3.4", (299 + 899) * S)).toEqual({ locked: true, retryAfter: 1 });
    expect(lockout.check("1.2.3.4", (299 + 900) * S)).toEqual({ locked: false });
    // The list was cleared when the lockout began: one more failure does not lock again.
    expect(lockout.fail("1.2.3.4", (299 + 900) * S)).toBe(false);
    expect(lockout.check("1.2.3.4", (299 + 900) * S)).toEqual({ locked: false });
  });

  it("other IPs are not affected", () => {
    const lockout = new LoginLockout();
    failTimes(
      lockout,
      "a",
      Array.from({ length: 10 }, (_, i) => i * S),
    );
    expect(lockout.check("a", 10 * S).locked).toBe(true);
    expect(lockout.check("b", 10 * S).locked).toBe(false);
  });

  it("failures older than 300 s are dropped", () => {
    const lockout = new LoginLockout();
    failTimes(
      lockout,
      "ip",
      [0, 100, 101, 102, 103, 104, 105, 106, 107].map((s) => s * S),
    );
    // 301 s after the first: the first has left the window, so this is the 9th in it.
    expect(lockout.fail("ip", 301 * S)).toBe(false);
    expect(lockout.check("ip", 301 * S).locked).toBe(false);
    expect(lockout.fail("ip", 302 * S)).toBe(true);
  });

  it("a failure exactly 300 s old still counts", () => {
    const lockout = new LoginLockout();
    failTimes(
      lockout,
      "ip",
      Array.from({ length: 9 }, (_, i) => i * S),
    );
    expect(lockout.fail("ip", 300 * S)).toBe(true);
  });

  it("a success clears the failures", () => {
    const lockout = new LoginLockout();
    failTimes(
      lockout,
      "ip",
      Array.from({ length: 9 }, (_, i) => i * S),
    );
    lockout.succeed("ip");
    expect(
      failTimes(
        lockout,
        "ip",
        Array.from({ length: 9 }, (_, i) => (10 + i) * S),
      ).some(Boolean),
    ).toBe(false);
    expect(lockout.fail("ip", 20 * S)).toBe(true);
  });

  it("failures during a lockout neither count nor extend it", () => {
    const lockout = new LoginLockout();
    failTimes(
      lockout,
      "ip",
      Array.from({ length: 10 }, () => 0),
    );
    expect(lockout.fail("ip", 100 * S)).toBe(false);
    expect(lockout.check("ip", 100 * S)).toEqual({ locked: true, retryAfter: 800 });
    expect(lockout.check("ip", 900 * S)).toEqual({ locked: false });
  });

  it("logins in flight count toward the limit, so parallel guesses cannot outrun it; settled() wakes the waiters", async () => {
    const lockout = new LoginLockout();
    failTimes(
      lockout,
      "ip",
      Array.from({ length: 8 }, () => 0),
    );
    expect(lockout.begin("ip", 0)).toBe(true);
    expect(lockout.begin("ip", 0)).toBe(true);
    expect(lockout.begin("ip", 0)).toBe(false);
    let woken = false;
    void lockout.settled("ip").then(() => (woken = true));
    lockout.fail("ip", 0);
    lockout.end("ip");
    await Promise.resolve();
    expect(woken).toBe(true);
    expect(lockout.begin("ip", 0)).toBe(false); // 9 failures + 1 in flight
    lockout.succeed("ip");
    lockout.end("ip");
    expect(lockout.begin("ip", 0)).toBe(true);
  });

  it("sweep forgets IPs with nothing left to remember", () => {
    const lockout = new LoginLockout();
    lockout.fail("old", 0);
    failTimes(
      lockout,
      "locked",
      Array.from({ length: 10 }, () => 0),
    );
    lockout.fail("recent", 290 * S);
    lockout.sweep(301 * S);
    expect(lockout.size).toBe(2);
    lockout.sweep(900 * S);
    expect(lockout.size).toBe(0);
  });
});
