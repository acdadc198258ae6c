// Short notices in the corner, and a guard that turns a failed request into one.
import { h } from "./dom.js";

export class Toasts {
  readonly el = h("div", { class: "toasts", role: "status", "aria-live": "polite" });

  show(text: string): void {
    const el = h("div", { class: "toast" }, text);
    this.el.append(el);
    setTimeout(() => el.remove(), 6000);
  }

  /** Run a request; on failure show "<what> failed: …" and resolve undefined. */
  async guard<T>(what: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      this.show(`${what} failed: ${(error as Error).message}`);
      return undefined;
    }
  }
}
