import { subscriberOf, type RedisClient } from "./options.js";

/**
 * The `onRevocation` of a Redis store whose revocations are published on `channel`: listeners hear
 * them on a duplicate connection of `redis`, opened at the first listener and closed after the
 * last, so a process that listens to nothing holds no subscription. A message `parse` turns down
 * (undefined) is dropped. Shared by the session and device stores, whose channels differ only in
 * what a message says.
 */
export function revocationChannel<T>(
  redis: RedisClient,
  channel: string,
  parse: (text: string) => T | undefined,
): (listener: (revocation: T) => void) => () => void {
  const listeners = new Set<(revocation: T) => void>();
  let subscriber: RedisClient | undefined;

  function subscribe(): void {
    const sub = subscriberOf(redis);
    sub.on("message", (_channel: string, text: string) => {
      const revocation = parse(text);
      if (revocation !== undefined) for (const listener of [...listeners]) listener(revocation);
    });
    sub.subscribe(channel).catch(() => undefined);
    subscriber = sub;
  }

  return (listener) => {
    listeners.add(listener);
    if (subscriber === undefined) subscribe();
    return () => {
      if (!listeners.delete(listener) || listeners.size > 0 || subscriber === undefined) return;
      const sub = subscriber;
      subscriber = undefined;
      sub.quit().catch(() => sub.disconnect());
    };
  };
}
