/**
 * One connection's way through the hello gate (docs/PROTOCOL.md §18.5): counted as on its way from
 * when it is taken until its first frame, then a place among the hellos in progress, or a place in
 * the queue for one, until its hello ends or it closes.
 * @module
 */
import type { HelloGate, HelloPlace } from "./hello-gate.js";

export class HelloPass {
  /** The gate's mark of the connection until its first frame. */
  #openedAt: number | undefined;
  /** Since when its hello holds a place. */
  #since: number | undefined;
  /** Its hello's place in the queue, while it waits for a place. */
  #place: HelloPlace | undefined;

  constructor(private readonly gate: HelloGate) {}

  /** The connection was taken: it counts as on its way until its first frame. */
  opened(): void {
    this.#openedAt = this.gate.opened();
  }

  /** Its hello holds a place, or waits for one. */
  get entered(): boolean {
    return this.#since !== undefined || this.#place !== undefined;
  }

  /** The first frame came, or the connection closed before one did. */
  firstFrame(): void {
    if (this.#openedAt !== undefined) this.gate.firstFrame(this.#openedAt);
    this.#openedAt = undefined;
  }

  /**
   * The hello of `chars` characters asks for a place: false when it is to be shed. When every place
   * is taken it is let in {@link waiting} for one: queue {@link waitForPlace} before the
   * connection's other frames, so that they wait with it.
   */
  enter(chars: number): boolean {
    const place = this.gate.enter(chars);
    if (place === undefined) return false;
    if (typeof place === "number") this.#since = place;
    else this.#place = place;
    return true;
  }

  /** Its hello waits for a place. */
  get waiting(): boolean {
    return this.#place !== undefined;
  }

  /** Resolves once the waiting hello holds its place (or at once when its connection closed meanwhile). */
  async waitForPlace(isClosed: () => boolean): Promise<void> {
    const place = this.#place;
    if (!place) return;
    const since = await place.entered;
    if (isClosed()) return; // closing gave the place back
    this.#place = undefined;
    this.#since = since;
  }

  /** The hello ended, or the connection closed: its place, or its place in the queue, is given back. */
  ended(): void {
    if (this.#since !== undefined) this.gate.leave(this.#since);
    this.#since = undefined;
    this.#place?.cancel();
    this.#place = undefined;
  }
}
