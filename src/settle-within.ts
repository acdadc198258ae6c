/**
 * A bounded wait, for shutdown and draining.
 * @module
 */

/** Wait for `work`, at most `ms`; the timer never outlives the wait, so it holds no process open. */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
