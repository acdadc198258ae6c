// The agent's open asks in the lane on screen (docs/PROTOCOL.md §11) as cards under the messages:
// an approval with the tool and its full arguments, a question with its options and a text field,
// a model picker. Each shows the time left; an answer from any device or an expiry removes it.
import type { GatewayClient, OpenAsk } from "chat-gateway/client";
import { h } from "../dom.js";
import type { Store } from "../store.js";
import type { Toasts } from "../toasts.js";
import { answeredFromLive } from "./answered-line.js";

function stringify(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** `4:59` for the time left; `0:00` once expired (the gateway's `picker.resolved` then closes the card). */
export function timeLeft(expiresAt: number, now: number): string {
  const seconds = Math.max(0, Math.ceil((expiresAt - now) / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

export class AskCardsView {
  readonly el = h("section", { class: "asks", "aria-label": "Waiting for your answer", hidden: true });
  readonly #client: GatewayClient;
  readonly #store: Store;
  readonly #toasts: Toasts;
  readonly #cards = new Map<string, HTMLElement>();
  /** Every ask seen open, until it resolves: its answer leaves a line that names it. */
  readonly #seen = new Map<string, OpenAsk>();
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(client: GatewayClient, store: Store, toasts: Toasts) {
    this.#client = client;
    this.#store = store;
    this.#toasts = toasts;
    // The answered card leaves its line under the answer that asked (docs/PROTOCOL.md §14.5).
    client.on("picker.resolved", (p) => {
      const ask = this.#seen.get(p.picker_id);
      this.#seen.delete(p.picker_id);
      if (ask) store.noteAnswered(p, ask.message_id, answeredFromLive(ask, p));
    });
  }

  destroy(): void {
    clearInterval(this.#timer);
  }

  /** Show the open asks of the lane on screen; cards still open keep their element (and focus, typed text). */
  render(): void {
    const lane = this.#store.current;
    const asks = lane ? this.#client.openAsks(lane) : [];
    for (const ask of this.#client.openAsks()) this.#seen.set(ask.picker_id, ask);
    const keep = new Set(asks.map((a) => a.picker_id));
    for (const [id, card] of this.#cards) {
      if (keep.has(id)) continue;
      // Disabling the answered button drops focus to the page; the card remembers it had it.
      const hadFocus = card.contains(document.activeElement) || card.dataset.hadFocus === "true";
      card.remove();
      this.#cards.delete(id);
      if (hadFocus) document.querySelector<HTMLElement>(".composer-input")?.focus();
    }
    for (const ask of asks) {
      if (this.#cards.has(ask.picker_id)) continue;
      const card = this.#card(ask);
      this.#cards.set(ask.picker_id, card);
      this.el.append(card);
    }
    this.el.hidden = asks.length === 0;
    this.#tick();
    if (asks.length > 0 && this.#timer === undefined) this.#timer = setInterval(() => this.#tick(), 1000);
    if (asks.length === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #tick(): void {
    const now = Date.now();
    for (const el of this.el.querySelectorAll<HTMLElement>("[data-expires-at]")) {
      const left = timeLeft(Number(el.dataset.expiresAt), now);
      if (el.textContent !== left) el.textContent = left;
    }
  }

  #card(ask: OpenAsk): HTMLElement {
    const heading = h("h3", { class: "ask-title", id: `ask-${ask.picker_id}-title` }, ask.title);
    const expires = h(
      "span",
      { class: "ask-expires", title: "Time left to answer" },
      h("span", { class: "visually-hidden" }, "Time left: "),
      h("span", { dataset: { expiresAt: String(ask.expires_at) } }, timeLeft(ask.expires_at, Date.now())),
      " left",
    );
    return h(
      "article",
      {
        class: `ask ask-${ask.kind}`,
        dataset: { pickerId: ask.picker_id, kind: ask.kind },
        "aria-labelledby": heading.id,
      },
      h(
        "header",
        { class: "ask-head" },
        h("span", { class: "tag" }, ask.kind === "approval" ? "Approval" : ask.kind === "model" ? "Model" : "Question"),
        heading,
        expires,
      ),
      ask.kind === "approval" ? this.#approval(ask) : ask.kind === "confirm" ? this.#confirm(ask) : this.#model(ask),
    );
  }

  #approval(ask: Extract<OpenAsk, { kind: "approval" }>): HTMLElement[] {
    const parts: HTMLElement[] = [];
    if (ask.body) parts.push(h("p", { class: "ask-body" }, ask.body));
    if (ask.tool) {
      parts.push(
        h(
          "details",
          { class: "ask-tool", open: true },
          h("summary", null, "Tool ", h("code", { class: "tool-name" }, ask.tool.name), " with arguments"),
          h(
            "pre",
            { class: "tool-args", tabindex: 0, "aria-label": `Arguments of ${ask.tool.name}` },
            stringify(ask.tool.args),
          ),
        ),
      );
    }
    parts.push(this.#buttons(ask, ask.options));
    return parts;
  }

  #confirm(ask: Extract<OpenAsk, { kind: "confirm" }>): HTMLElement[] {
    const parts: HTMLElement[] = [];
    if (ask.body) parts.push(h("p", { class: "ask-body" }, ask.body));
    if (ask.options.length > 0) parts.push(this.#buttons(ask, ask.options));
    if (ask.allow_text) {
      const input = h("input", {
        type: "text",
        class: "ask-text",
        maxlength: 4000,
        "aria-label": `Your answer to: ${ask.title}`,
        placeholder: "Or answer in your words…",
      });
      const form = h("form", { class: "ask-text-form" }, input, h("button", { type: "submit" }, "Send answer"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        if (input.value.trim() !== "") void this.#answer(ask, { text: input.value.trim() }, form);
      });
      parts.push(form);
    }
    return parts;
  }

  #model(ask: Extract<OpenAsk, { kind: "model" }>): HTMLElement[] {
    const options = ask.models.map((m) => ({ id: m.id, label: m.current ? `${m.label} (current)` : m.label }));
    return [this.#buttons(ask, options, "Choose a model")];
  }

  #buttons(ask: OpenAsk, options: { id: string; label: string }[], label = "Answers"): HTMLElement {
    const group = h("div", { class: "ask-options", role: "group", "aria-label": label });
    for (const option of options) {
      const kind = option.id === "approve" ? "" : option.id === "deny" ? "danger" : "secondary";
      group.append(
        h(
          "button",
          {
            type: "button",
            class: kind,
            dataset: { optionId: option.id },
            onclick: () => void this.#answer(ask, { option_id: option.id }, group),
          },
          option.label,
        ),
      );
    }
    return group;
  }

  /** Sends the answer; the card closes when `picker.resolved` comes (the open asks change). */
  async #answer(ask: OpenAsk, answer: { option_id?: string; text?: string }, controls: HTMLElement): Promise<void> {
    const card = controls.closest<HTMLElement>(".ask");
    if (card?.contains(document.activeElement)) card.dataset.hadFocus = "true";
    const buttons = [...controls.querySelectorAll<HTMLButtonElement | HTMLInputElement>("button, input")];
    for (const b of buttons) b.disabled = true;
    try {
      const resolved = await this.#client.select(ask.picker_id, answer);
      if (resolved.device_id !== undefined && resolved.device_id !== this.#client.deviceId)
        this.#toasts.show("Already answered on another device.");
      else if (resolved.outcome !== "selected") this.#toasts.show(`This request was already ${resolved.outcome}.`);
    } catch (error) {
      for (const b of buttons) b.disabled = false;
      if (card) delete card.dataset.hadFocus;
      this.#toasts.show(`Answer not sent: ${(error as Error).message}`);
    }
  }
}
