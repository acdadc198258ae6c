// The per-test life of an implementation under test, shared by the suites whose factories may
// return it alone or wrapped with a peer (a second instance on the same medium) and a clean-up.
import { afterEach, beforeEach } from "vitest";

/** What a factory may return wrapped: the implementation under `key`, a peer and a clean-up. */
export type Wrapped<K extends string, T> = { [P in K]: T } & { peer?: T; cleanup?: () => Promise<void> };

/** The implementation of the running test, and its peer (itself when the factory gave none). */
export interface Current<T> {
  readonly value: T;
  readonly peer: T;
}

/**
 * Declares the hooks that make a fresh implementation before each test (`make`) and release it
 * after (`close` on it and its peer, then the factory's clean-up). `bare` tells an implementation
 * returned alone from a wrapped one.
 */
export function eachTest<K extends string, T extends object>(
  key: K,
  make: () => T | Wrapped<K, T> | Promise<T | Wrapped<K, T>>,
  bare: (made: T | Wrapped<K, T>) => made is T,
  close: (value: T) => unknown = () => undefined,
): Current<T> {
  let current: { value: T; peer: T; cleanup?: () => Promise<void> } | undefined;
  beforeEach(async () => {
    const made = await make();
    const wrapped = bare(made) ? ({ [key]: made } as unknown as Wrapped<K, T>) : made;
    current = { value: wrapped[key], peer: wrapped.peer ?? wrapped[key], cleanup: wrapped.cleanup };
  });
  afterEach(async () => {
    const { value, peer, cleanup } = current!;
    current = undefined;
    await close(value);
    if (peer !== value) await close(peer);
    await cleanup?.();
  });
  return {
    get value() {
      return current!.value;
    },
    get peer() {
      return current!.peer;
    },
  };
}
