// Modal dialogs on the native <dialog> element: a text prompt, a confirmation, and a free form.
import { h } from "./dom.js";

function modal(
  title: string,
  body: Node[],
  actions: HTMLElement[],
  onSubmit: () => void,
  onClose: () => void,
): HTMLDialogElement {
  const titleId = `dialog-title-${Math.random().toString(36).slice(2)}`;
  const form = h(
    "form",
    { method: "dialog", class: "dialog-form" },
    h("h2", { id: titleId }, title),
    ...body,
    h("div", { class: "dialog-actions" }, ...actions),
  );
  const dialog = h("dialog", { "aria-labelledby": titleId }, form);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onSubmit();
    dialog.close();
  });
  dialog.addEventListener("close", () => {
    onClose();
    dialog.remove();
  });
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

/** Ask for one line of text; resolves null when cancelled. */
export function promptDialog(title: string, label: string, initial = "", confirm = "Save"): Promise<string | null> {
  return new Promise((resolve) => {
    let result: string | null = null;
    const input = h("input", { type: "text", value: initial, required: true, maxlength: 100, autocomplete: "off" });
    const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
    const dialog = modal(
      title,
      [h("label", { class: "field" }, h("span", null, label), input)],
      [cancel, h("button", { type: "submit" }, confirm)],
      () => (result = input.value.trim() || null),
      () => resolve(result),
    );
    cancel.addEventListener("click", () => dialog.close());
    input.select();
  });
}

/**
 * Ask a yes/no question; resolves true on confirm, false on cancel or Escape. `text` is one
 * paragraph or several; the confirm button is red unless `danger` is false.
 */
export function confirmDialog(
  title: string,
  text: string | readonly string[],
  confirm = "Delete",
  { cancel: cancelLabel = "Cancel", danger = true }: { cancel?: string; danger?: boolean } = {},
): Promise<boolean> {
  return new Promise((resolve) => {
    let result = false;
    const cancel = h("button", { type: "button", class: "secondary" }, cancelLabel);
    const dialog = modal(
      title,
      (typeof text === "string" ? [text] : text).map((paragraph) => h("p", { class: "dialog-text" }, paragraph)),
      [cancel, h("button", { type: "submit", class: danger ? "danger" : undefined }, confirm)],
      () => (result = true),
      () => resolve(result),
    );
    cancel.addEventListener("click", () => dialog.close());
  });
}

/** A dialog with arbitrary content and a Close button. */
export function infoDialog(title: string, body: Node[]): HTMLDialogElement {
  const dialog = modal(
    title,
    body,
    [h("button", { type: "submit" }, "Close")],
    () => undefined,
    () => undefined,
  );
  return dialog;
}
