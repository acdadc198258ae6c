// The SessionStore conformance suite, exported by "chat-gateway/testing".
import { createHash, randomBytes } from "node:crypto";
import { beforeEach, describe, expect, test } from "vitest";
import type { Session, SessionStore } from "chat-gateway";
import { eachTest, type Current } from "./under-test.js";
import { sleep, until } from "./wait.js";

/** A session store under test: the store, optionally a second one on the same medium, and the clean-up. */
export interface SessionStoreUnderTest {
  store: SessionStore;
  /** A second store sharing the data, as another process would have; without it `store` itself. */
  peer?: SessionStore;
  /** Runs after the test. */
  cleanup?: () => Promise<void>;
}

/**
 * Makes the session store for one test: called before every test, it must return a store (or a
 * {@link SessionStoreUnderTest}) that shares no sessions with the ones it made before.
 */
export type SessionStoreFactory = () =>
  | SessionStore
  | SessionStoreUnderTest
  | Promise<SessionStore | SessionStoreUnderTest>;

/** Unix seconds. The suite uses the real clock: a store may also expire sessions on its own. */
const now = () => Math.floor(Date.now() / 1000);
const token = () => randomBytes(32).toString("base64url");
const session = (username = "alice", lifetime = 3600): Session => ({
  token: token(),
  username,
  expires_at: now() + lifetime,
});
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
type Revocation = { session: string } | { user: string };

/**
 * Declares, with vitest's `describe`/`test`, the conformance tests of the {@link SessionStore}
 * contract (login sessions) for one implementation, inside a
 * `describe("session store conformance: <name>")` block:
 *
 * ```ts
 * import { describeSessionStoreConformance } from "chat-gateway/testing";
 * describeSessionStoreConformance("my store", () => mySessionStore());
 * ```
 *
 * What it checks:
 * - create and get: a session reads back equal, through the peer too, and as a copy; a token that
 *   differs by one character, a prefix of it or one never issued finds nothing;
 * - expiry: at `expires_at` a session reads as absent and stays deleted, also for an earlier
 *   `now`; a session created already expired is not returned;
 * - revocation: `delete` ends one session and ignores unknown tokens; `deleteUser` ends every
 *   session of that user and no other;
 * - concurrency: 50 sessions created at once are all kept;
 * - `onRevocation`, when implemented: every listener (in either store) hears `{session}` (the
 *   token's SHA-256 hex, never the token) and `{user}`, and nothing after it unsubscribed.
 *
 * @param name Shown in the test names, e.g. `"redis"`.
 * @param make Makes the store for one test; see {@link SessionStoreFactory}.
 */
export function describeSessionStoreConformance(name: string, make: SessionStoreFactory): void {
  describe(`session store conformance: ${name}`, () => {
    const current = eachTest<"store", SessionStore>("store", make, (made): made is SessionStore => "create" in made);
    let store: SessionStore;
    let peer: SessionStore;
    beforeEach(() => {
      ({ value: store, peer } = current);
    });

    test("create - a session reads back equal, through the peer too, and as a copy", async () => {
      const s = session();
      await store.create(s, now());
      expect(await store.get(s.token, now())).toEqual(s);
      const got = (await peer.get(s.token, now()))!;
      expect(got).toEqual(s);
      got.username = "mallory";
      got.expires_at += 1_000_000;
      expect(await store.get(s.token, now())).toEqual(s);
    });

    test("get - only the exact token finds a session", async () => {
      const s = session();
      await store.create(s, now());
      const flipped = s.token.slice(0, -1) + (s.token.endsWith("A") ? "B" : "A");
      for (const other of [flipped, s.token.slice(0, 20), `${s.token}x`, "", token()])
        expect(await store.get(other, now())).toBeUndefined();
      expect(await store.get(s.token, now())).toEqual(s);
    });

    test("expiry - at expires_at a session reads as absent and stays deleted", async () => {
      const t = now();
      const s = { ...session(), expires_at: t + 10 };
      await store.create(s, t);
      expect(await store.get(s.token, t + 9)).toEqual(s);
      expect(await store.get(s.token, t + 10)).toBeUndefined();
      expect(await peer.get(s.token, t)).toBeUndefined();
      const bornDead = { ...session(), expires_at: t - 1 };
      await store.create(bornDead, t);
      expect(await store.get(bornDead.token, t)).toBeUndefined();
    });

    test("delete - ends one session, unknown tokens are ignored", async () => {
      const [a, b] = [session(), session()];
      await store.create(a, now());
      await store.create(b, now());
      await peer.delete(a.token);
      await store.delete("never-issued");
      await store.delete(a.token);
      expect(await store.get(a.token, now())).toBeUndefined();
      expect(await store.get(b.token, now())).toEqual(b);
    });

    test("deleteUser - ends every session of that user and no other", async () => {
      const dave = [session("dave"), session("dave"), session("dave")];
      const others = [session("erin"), session("dave2"), session("Dave")];
      for (const s of [...dave, ...others]) await store.create(s, now());
      await peer.deleteUser("dave");
      await store.deleteUser("nobody");
      for (const s of dave) expect(await store.get(s.token, now())).toBeUndefined();
      for (const s of others) expect(await store.get(s.token, now())).toEqual(s);
      const later = session("dave");
      await store.create(later, now());
      expect(await store.get(later.token, now())).toEqual(later);
    });

    test("concurrency - 50 sessions created at once are all kept", async () => {
      const many = Array.from({ length: 50 }, (_, i) => session(`user${i % 5}`));
      await Promise.all(many.map((s) => store.create(s, now())));
      const back = await Promise.all(many.map((s) => peer.get(s.token, now())));
      expect(back).toEqual(many);
    });

    describeRevocationTest(current);
  });
}

/** `onRevocation`, in the store and its peer when they implement it. */
function describeRevocationTest(current: Current<SessionStore>): void {
  const session = (username: string): Session => ({ token: token(), username, expires_at: now() + 3600 });
  test("onRevocation - when implemented, listeners hear the ended session's digest and the ended user", async () => {
    const stores = [...new Set([current.value, current.peer])].filter((s) => typeof s.onRevocation === "function");
    const heard = stores.map(() => [] as Revocation[]);
    const stops = stores.map((s, i) => s.onRevocation!((r) => heard[i].push(r)));
    // A store shared over a network subscribes asynchronously: send probes until each listener hears one.
    const probe = session("probe");
    for (let tries = 0; heard.some((h) => h.length === 0) && tries < 100; tries++) {
      await current.value.create({ ...probe, token: `${probe.token}${tries}` }, now());
      await current.value.delete(`${probe.token}${tries}`);
      await sleep(20);
    }
    for (const h of heard) h.length = 0;
    const s = session("grace");
    await current.value.create(s, now());
    await current.value.delete(s.token);
    await current.value.deleteUser("heidi");
    for (const h of heard) {
      await until(() => h.some((r) => "user" in r && r.user === "heidi"), "the revocation of user heidi");
      expect(h).toContainEqual({ session: sha256(s.token) });
      expect(JSON.stringify(h)).not.toContain(s.token);
    }
    for (const stop of stops) stop();
    for (const h of heard) h.length = 0;
    await current.value.deleteUser("ivan");
    await sleep(100);
    for (const h of heard) expect(h).toEqual([]);
  });
}
