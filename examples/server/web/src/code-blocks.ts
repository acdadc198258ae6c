// Rendered code blocks get a header with the language and a copy button, and become focusable
// so a keyboard user can scroll a long line sideways.
import { h } from "./dom.js";

/** Put text on the clipboard; false when the browser refuses. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** Show on a button that the copy worked (or did not) for a moment. */
export async function copyWithFeedback(button: HTMLButtonElement, text: string): Promise<void> {
  const label = button.textContent;
  button.textContent = (await copyText(text)) ? "Copied" : "Copy failed";
  setTimeout(() => (button.textContent = label), 1500);
}

function languageOf(code: Element | null): string {
  return /(?:^|\s)language-(\S+)/.exec(code?.className ?? "")?.[1] ?? "";
}

/** Wrap each `<pre>` of rendered Markdown in a block with a header. */
export function enhanceCodeBlocks(root: HTMLElement): void {
  for (const pre of root.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    const language = languageOf(code);
    const name = language ? `${language} code` : "Code";
    // A scrollable region must take focus (WCAG 2.1.1); the name says what it holds.
    Object.assign(pre, { tabIndex: 0 });
    pre.setAttribute("role", "region");
    pre.setAttribute("aria-label", name);
    const copy = h("button", { type: "button", class: "copy-code", "aria-label": `Copy ${name}` }, "Copy");
    copy.addEventListener("click", () => void copyWithFeedback(copy, code?.textContent ?? pre.textContent ?? ""));
    const block = h("div", { class: "code-block", dataset: { language: language || "text" } });
    pre.replaceWith(block);
    block.append(h("div", { class: "code-head" }, h("span", { class: "code-lang" }, language || "text"), copy), pre);
  }
}
