// Safe Markdown: markdown-it with raw HTML off (it is escaped as text), its link validation
// (no javascript:, vbscript:, file: or non-image data: URLs) and links that open in a new tab
// without giving the page a handle on this one.
import MarkdownIt from "markdown-it";
import { enhanceCodeBlocks } from "./code-blocks.js";
import { highlightCode } from "./highlight.js";

const md = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: true,
  typographer: false,
  highlight: (code, language) => highlightCode(code, language.trim().toLowerCase()),
});

const renderToken: NonNullable<typeof md.renderer.rules.link_open> = (tokens, idx, options, _env, self) =>
  self.renderToken(tokens, idx, options);
const linkOpen = md.renderer.rules.link_open ?? renderToken;
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet("target", "_blank");
  tokens[idx].attrSet("rel", "noopener noreferrer");
  return linkOpen(tokens, idx, options, env, self);
};

/** Markdown → HTML with no raw HTML from the source. */
export function markdownToHtml(text: string): string {
  return md.render(text);
}

/** Render Markdown into an element. */
export function renderMarkdown(el: HTMLElement, text: string): void {
  el.innerHTML = markdownToHtml(text);
  enhanceCodeBlocks(el);
}
