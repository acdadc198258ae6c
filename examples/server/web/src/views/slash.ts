// The "/" command list above the composer: filters the command catalog as the user types; once a
// command and a space are typed, lists the gateway's completions of its argument
// (`commands.complete`: open picker ids, model ids…). Arrow keys move, Tab or Enter completes,
// Escape closes. An ARIA listbox owned by the textarea.
import type { CommandEntry, Completion } from "chat-gateway";
import { clear, h } from "../dom.js";

/** One row of the list: what it shows and what choosing it puts in the composer. */
interface Item {
  name: string;
  hint: string;
  description: string;
  value: string;
}

/** Asks the gateway for completions of a typed command line; rejects when it cannot. */
export type Completer = (text: string) => Promise<Completion[]>;

/** Milliseconds of typing pause before completions are asked for. */
const COMPLETE_DELAY_MS = 120;

export class SlashMenu {
  readonly el = h("ul", {
    id: "slash-list",
    class: "slash-list",
    role: "listbox",
    "aria-label": "Commands",
    hidden: true,
  });
  /** The catalog from `commands.catalog`; empty until it arrives. */
  commands: CommandEntry[] = [];
  readonly #input: HTMLTextAreaElement;
  readonly #completer: Completer | undefined;
  #active = 0;
  #matches: Item[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(input: HTMLTextAreaElement, completer?: Completer) {
    this.#input = input;
    this.#completer = completer;
    input.addEventListener("input", () => this.update());
  }

  /** Handle a key while the list is open; true when the key was the list's. */
  key(event: KeyboardEvent): boolean {
    if (this.el.hidden || this.#matches.length === 0) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const n = this.#matches.length;
      this.#active = (this.#active + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
      this.#render();
      return true;
    }
    if (event.key === "Tab" || (event.key === "Enter" && !event.shiftKey)) {
      event.preventDefault();
      this.#choose(this.#matches[this.#active]);
      return true;
    }
    if (event.key === "Escape") {
      this.el.hidden = true;
      return true;
    }
    return false;
  }

  update(): void {
    const value = this.#input.value;
    clearTimeout(this.#timer);
    if (/^\/\S+ [^\n]*$/.test(value) && this.#completer) {
      this.#timer = setTimeout(() => void this.#complete(value), COMPLETE_DELAY_MS);
    }
    const match = /^\/\S*$/.exec(value);
    this.#show(
      match
        ? this.commands
            .filter(
              (c) =>
                [c.name, ...c.aliases].some((n) => n.startsWith(value)) && !(c.name === value && c.args_hint === ""),
            )
            .slice(0, 8)
            .map((c) => ({ name: c.name, hint: c.args_hint, description: c.description, value: `${c.name} ` }))
        : [],
    );
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#show([]);
  }

  #show(items: Item[]): void {
    this.#matches = items;
    this.#active = 0;
    this.#render();
  }

  /** Lists the gateway's completions of `text`, unless the composer changed meanwhile. */
  async #complete(text: string): Promise<void> {
    let completions: Completion[];
    try {
      completions = await this.#completer!(text);
    } catch {
      return; // completions are a help: without them the user types on
    }
    if (this.#input.value !== text) return;
    const items = completions
      .filter((c) => c.value !== text.trimEnd())
      .slice(0, 8)
      .map((c) => ({ name: c.value, hint: "", description: c.description, value: c.value }));
    this.#show(items);
  }

  #render(): void {
    clear(this.el);
    const open = this.#matches.length > 0;
    this.el.hidden = !open;
    if (!open) return this.#input.removeAttribute("aria-activedescendant");
    this.#matches.forEach((c, i) => {
      const li = h(
        "li",
        {
          id: `slash-${i}`,
          role: "option",
          "aria-selected": String(i === this.#active),
          class: i === this.#active ? "active" : "",
        },
        h("span", { class: "slash-name" }, c.name),
        c.hint ? h("span", { class: "slash-args" }, ` ${c.hint}`) : null,
        h("span", { class: "slash-desc" }, c.description),
      );
      li.addEventListener("mousedown", (event) => {
        event.preventDefault();
        this.#choose(c);
      });
      this.el.append(li);
    });
    this.#input.setAttribute("aria-activedescendant", `slash-${this.#active}`);
  }

  #choose(c: Item | undefined): void {
    if (!c) return;
    this.#input.value = c.value;
    this.close();
    this.#input.focus();
    // A chosen command may take an argument: offer its completions next.
    if (c.value.endsWith(" ")) this.update();
  }
}
