// The "/" command list above the composer: filters the command catalog as the user types, arrow
// keys move, Tab or Enter completes, Escape closes. An ARIA listbox owned by the textarea.
import type { CommandEntry } from "chat-gateway";
import { clear, h } from "../dom.js";

export class SlashMenu {
  readonly el = h("ul", { id: "slash-list", class: "slash-list", role: "listbox", "aria-label": "Commands", hidden: true });
  /** The catalog from `commands.catalog`; empty until it arrives. */
  commands: CommandEntry[] = [];
  readonly #input: HTMLTextAreaElement;
  #active = 0;
  #matches: CommandEntry[] = [];

  constructor(input: HTMLTextAreaElement) {
    this.#input = input;
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
      this.#complete(this.#matches[this.#active]);
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
    const match = /^\/\S*$/.exec(value);
    this.#matches = match
      ? this.commands.filter((c) => [c.name, ...c.aliases].some((n) => n.startsWith(value)) && !(c.name === value && c.args_hint === "")).slice(0, 8)
      : [];
    this.#active = 0;
    this.#render();
  }

  close(): void {
    this.#matches = [];
    this.#render();
  }

  #render(): void {
    clear(this.el);
    const open = this.#matches.length > 0;
    this.el.hidden = !open;
    if (!open) return this.#input.removeAttribute("aria-activedescendant");
    this.#matches.forEach((c, i) => {
      const li = h(
        "li",
        { id: `slash-${i}`, role: "option", "aria-selected": String(i === this.#active), class: i === this.#active ? "active" : "" },
        h("span", { class: "slash-name" }, c.name),
        c.args_hint ? h("span", { class: "slash-args" }, ` ${c.args_hint}`) : null,
        h("span", { class: "slash-desc" }, c.description),
      );
      li.addEventListener("mousedown", (event) => {
        event.preventDefault();
        this.#complete(c);
      });
      this.el.append(li);
    });
    this.#input.setAttribute("aria-activedescendant", `slash-${this.#active}`);
  }

  #complete(c: CommandEntry | undefined): void {
    if (!c) return;
    this.#input.value = `${c.name} `;
    this.close();
    this.#input.focus();
  }
}
