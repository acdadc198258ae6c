import type { Storage } from "chat-gateway/storage";

/**
 * The storage with every method call timed: `observe(op, seconds)` once the call settles (a
 * promise) or returns. Other properties (`capabilities`) pass through unchanged, so the gateway
 * sees the same storage.
 */
export function timedStorage<S extends Storage>(storage: S, observe: (op: string, seconds: number) => void): S {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(storage, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || typeof prop !== "string") return value;
      let timed = wrapped.get(prop);
      if (timed === undefined) {
        const method = value as (...args: unknown[]) => unknown;
        timed = (...args: unknown[]) => {
          const start = performance.now();
          const done = () => observe(prop, (performance.now() - start) / 1000);
          const result = Reflect.apply(method, target, args);
          if (result instanceof Promise) return result.finally(done);
          done();
          return result;
        };
        wrapped.set(prop, timed);
      }
      return timed;
    },
  });
}
