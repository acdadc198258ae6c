// A device as the suites use it: sends protocol frames over a ClientSocket and keeps every frame,
// binary message and the close code it receives.
import type { ClientSocket } from "./client-socket.js";
import { until } from "./wait.js";

/** A frame as a device receives it (docs/PROTOCOL.md §1). */
export interface Frame {
  type: string;
  id?: string;
  seq?: number;
  // biome-ignore lint/suspicious/noExplicitAny: a test device reads any frame's fields; the suites' assertions check them
  payload: Record<string, any>;
}

let lastId = 0;

export class Device {
  readonly frames: Frame[] = [];
  readonly binary: Uint8Array[] = [];
  /** Text messages that were not JSON frames, in arrival order. */
  readonly text: string[] = [];
  closeCode: number | undefined;

  constructor(readonly socket: ClientSocket) {
    socket.onMessage((data) => {
      if (typeof data !== "string") return void this.binary.push(data);
      try {
        this.frames.push(JSON.parse(data) as Frame);
      } catch {
        this.text.push(data);
      }
    });
    socket.onClose((code) => (this.closeCode = code));
  }

  send(type: string, payload?: Record<string, unknown>, id?: string): void {
    this.socket.send(
      JSON.stringify({ type, ...(id === undefined ? {} : { id }), ...(payload === undefined ? {} : { payload }) }),
    );
  }

  /** Sends a request and resolves with the frame that carries its `id`. */
  async request(type: string, payload?: Record<string, unknown>, ms = 5_000): Promise<Frame> {
    const id = `kit-${++lastId}`;
    this.send(type, payload, id);
    return this.waitFor((f) => f.id === id, `the answer to ${type}`, ms);
  }

  /** Sends `hello` and resolves with `hello.ok`; throws with the answer otherwise. */
  async hello(extra: Record<string, unknown> = {}): Promise<Frame> {
    const answer = await this.request("hello", {
      token: "",
      device_id: `kit-device-${++lastId}`,
      device_name: "conformance kit",
      ...extra,
    });
    if (answer.type !== "hello.ok") throw new Error(`hello was refused: ${JSON.stringify(answer)}`);
    return answer;
  }

  /** Resolves with the first frame (from index `from`) that matches. */
  async waitFor(match: (frame: Frame) => boolean, what: string, ms = 5_000, from = 0): Promise<Frame> {
    let found: Frame | undefined;
    await until(
      () => {
        found = this.frames.slice(from).find(match);
        if (!found && this.closeCode !== undefined)
          throw new Error(
            `closed with ${this.closeCode} while waiting for ${what}; last frames ${JSON.stringify(this.frames.slice(-3))}`,
          );
        return found !== undefined;
      },
      what,
      ms,
    );
    return found!;
  }

  /** Resolves with the close code once the socket closed. */
  async closed(ms = 5_000): Promise<number> {
    await until(() => this.closeCode !== undefined, "the socket to close", ms);
    return this.closeCode!;
  }

  of(type: string): Frame[] {
    return this.frames.filter((f) => f.type === type);
  }
}
