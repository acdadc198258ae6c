// The composer: the message box with its "/" command list, attachments with upload progress,
// auto-thread, the Stop button, and sending. A message sent while an answer runs waits on the
// gateway, in the lane's queue every device shows (docs/PROTOCOL.md §14.4). Read-only (a note
// instead) in automation channels.
import type { MediaRef } from "chat-gateway";
import type { GatewayClient, SendInput } from "chat-gateway/client";
import { clear, h, icon } from "../dom.js";
import type { Lane, Store } from "../store.js";
import type { Toasts } from "../toasts.js";
import { PendingSends } from "./pending-sends.js";
import { SlashMenu } from "./slash.js";
import { StopButton } from "./stop-button.js";

/** How long a send made while the page connects waits for the first lane (ms): the hello deadline. */
const FIRST_LANE_WAIT_MS = 10_000;

interface Attachment {
  id: number;
  name: string;
  ref?: MediaRef;
  failed?: string;
  el: HTMLElement;
}

export interface ComposerDeps {
  client: GatewayClient;
  store: Store;
  toasts: Toasts;
  openLane(chatId: string, threadId: string | null): Promise<void>;
  /** A message went out: show the bottom of the log. */
  onSent(): void;
}

export class Composer {
  readonly el = h("div", { class: "composer-area" });
  readonly #deps: ComposerDeps;
  readonly #textarea = h("textarea", {
    class: "composer-input",
    rows: 2,
    placeholder: "Message… (/ for commands)",
    title: "Enter sends, Shift+Enter starts a new line, / lists commands",
    "aria-label": "Message",
    "aria-autocomplete": "list",
    "aria-controls": "slash-list",
  });
  readonly slash: SlashMenu;
  readonly #autoThread = h("input", { type: "checkbox", id: "auto-thread" });
  readonly #autoThreadLabel = h(
    "label",
    { class: "toggle", for: "auto-thread", title: "Start a new thread for this message" },
    this.#autoThread,
    " Auto-thread",
  );
  readonly #fileInput = h("input", { type: "file", id: "file-input", class: "visually-hidden", multiple: true });
  readonly #chips = h("div", { class: "chips", role: "group", "aria-label": "Attachments" });
  readonly #sendButton = h("button", { type: "submit", class: "send" }, "Send");
  readonly #form: HTMLFormElement;
  readonly #stop: StopButton;
  readonly #pending: PendingSends;
  #attachments: Attachment[] = [];
  /** A send made before the first lane opened is waiting for it. */
  #waitingForLane = false;
  #nextAttachment = 0;

  constructor(deps: ComposerDeps) {
    this.#deps = deps;
    this.#stop = new StopButton(deps.client, deps.store, deps.toasts);
    this.#pending = new PendingSends(deps.client);
    this.slash = new SlashMenu(this.#textarea, (text) => {
      const lane = deps.store.current;
      return lane ? deps.client.complete(lane, text, { timeoutMs: 5000 }) : Promise.resolve([]);
    });
    const attach = h(
      "label",
      {
        class: "icon attach",
        for: "file-input",
        title: "Attach files",
        role: "button",
        tabindex: 0,
        "aria-label": "Attach files",
      },
      icon("clip"),
    );
    this.#form = h(
      "form",
      { class: "composer", "aria-label": "Send a message" },
      this.#pending.el,
      this.#pending.status,
      this.#chips,
      h(
        "div",
        { class: "composer-row" },
        attach,
        this.#fileInput,
        h("div", { class: "composer-input-wrap" }, this.slash.el, this.#textarea),
        this.#stop.el,
        this.#sendButton,
      ),
      h("div", { class: "composer-options" }, this.#autoThreadLabel),
    );
    this.el.append(this.#form);
    this.#form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.send();
    });
    this.#textarea.addEventListener("keydown", (event) => this.#key(event));
    this.#fileInput.addEventListener("change", () => {
      for (const file of this.#fileInput.files ?? []) void this.upload(file);
      this.#fileInput.value = "";
    });
    attach.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        this.#fileInput.click();
      }
    });
  }

  /** Show the composer for the lane on screen (or the read-only note of an automation channel). */
  render(): void {
    const lane = this.#deps.store.current;
    const ch = lane && this.#deps.store.channelOf(lane);
    const readOnly = Boolean(ch?.automation || (lane && this.#deps.store.channels.get(lane.chat_id)?.automation));
    this.el.hidden = false;
    this.el.querySelector(".readonly-note")?.remove();
    this.#form.hidden = readOnly;
    if (readOnly)
      this.el.append(h("p", { class: "readonly-note" }, "This is an automation channel: only the gateway posts here."));
    this.#autoThreadLabel.hidden = Boolean(lane?.thread_id);
    this.update();
  }

  /** An answer started or ended, or the connection changed: the Stop button follows. */
  update(): void {
    this.#stop.update();
    this.#pending.render();
  }

  /** Put a text in the message box to be edited and sent as a new message. */
  editText(text: string, replace = true): void {
    if (!replace && this.#textarea.value) return;
    this.#textarea.value = text;
    this.#textarea.focus();
    this.#textarea.setSelectionRange(text.length, text.length);
  }

  /** Send a text to the lane on screen; the gateway queues it behind a running answer. */
  async sendText(text: string): Promise<void> {
    const lane = this.#deps.store.current;
    if (!lane) return;
    const input = { chat_id: lane.chat_id, thread_id: lane.thread_id, text };
    await this.#deps.toasts.guard("Send", () => this.#pending.send(input));
    this.#deps.onSent();
  }

  #key(event: KeyboardEvent): void {
    if (this.slash.key(event)) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void this.send();
    }
  }

  /**
   * The first lane, for a send made while the page still connects: Enter then did nothing and the
   * text sat in the box. Waits up to the hello deadline; a second Enter meanwhile is the same send.
   */
  async #firstLane(): Promise<Lane | undefined> {
    if (this.#waitingForLane) return undefined;
    this.#waitingForLane = true;
    try {
      for (let waited = 0; waited < FIRST_LANE_WAIT_MS && !this.#deps.store.current; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return this.#deps.store.current;
    } finally {
      this.#waitingForLane = false;
    }
  }

  async upload(file: File): Promise<void> {
    const id = ++this.#nextAttachment;
    const progress = h("progress", { max: 100, value: 0, "aria-label": `Uploading ${file.name}` });
    const remove = h("button", { type: "button", class: "icon small", "aria-label": `Remove ${file.name}` }, "×");
    const el = h(
      "span",
      { class: "chip uploading", dataset: { file: file.name } },
      h("span", { class: "chip-name" }, file.name),
      progress,
      remove,
    );
    const attachment: Attachment = { id, name: file.name, el };
    remove.addEventListener("click", () => {
      this.#attachments = this.#attachments.filter((a) => a.id !== id);
      el.remove();
    });
    this.#attachments.push(attachment);
    this.#chips.append(el);
    try {
      attachment.ref = await this.#deps.client.upload(file, {
        onProgress: (sent, total) => (progress.value = total ? Math.round((sent / total) * 100) : 100),
      });
      el.classList.remove("uploading");
      el.classList.add("ready");
      progress.remove();
    } catch (error) {
      attachment.failed = (error as Error).message;
      el.classList.remove("uploading");
      el.classList.add("failed");
      progress.remove();
      el.title = `Upload failed: ${attachment.failed}`;
      this.#deps.toasts.show(`Upload of ${file.name} failed: ${attachment.failed}`);
    }
  }

  async send(): Promise<void> {
    const lane = this.#deps.store.current ?? (await this.#firstLane());
    if (!lane) return;
    if (this.#attachments.some((a) => !a.ref && !a.failed)) {
      this.#deps.toasts.show("Wait for the uploads to finish.");
      return;
    }
    const text = this.#textarea.value;
    const ready = this.#attachments.filter((a) => a.ref);
    if (!text.trim() && ready.length === 0) return;
    const autoThread = this.#autoThread.checked && lane.thread_id === null;
    const input: SendInput = {
      chat_id: lane.chat_id,
      thread_id: lane.thread_id,
      text,
      ...(ready.length ? { media_refs: ready.map((a) => a.ref!.media_id) } : {}),
      ...(autoThread ? { auto_thread: true } : {}),
    };
    this.#textarea.value = "";
    this.slash.close();
    const sentAttachments = this.#attachments;
    this.#attachments = [];
    clear(this.#chips);
    this.#sendButton.disabled = true;
    try {
      const echo = await this.#pending.send(input);
      this.#deps.onSent();
      if (echo.thread_id !== lane.thread_id) {
        this.#autoThread.checked = false;
        await this.#deps.openLane(echo.chat_id, echo.thread_id);
      }
    } catch (error) {
      if (!this.#textarea.value) this.#textarea.value = text;
      this.#attachments = sentAttachments;
      for (const a of sentAttachments) this.#chips.append(a.el);
      this.#deps.toasts.show(`Not sent: ${(error as Error).message}`);
    } finally {
      this.#sendButton.disabled = false;
      this.#textarea.focus();
    }
  }
}
