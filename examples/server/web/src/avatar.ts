// Channel avatars: the channel's icon, else its first letter on a colour of its own (the
// channel's colour, or one derived from the name).
import type { Channel } from "chat-gateway";
import { h } from "./dom.js";

function hash(text: string): number {
  let n = 0;
  for (const ch of text) n = (Math.imul(n, 31) + ch.codePointAt(0)!) >>> 0;
  return n;
}

/** A dark enough hue for white text (contrast over 4.5:1). */
export function colorFor(name: string): string {
  return `hsl(${hash(name) % 360} 55% 30%)`;
}

function textOn(hex: string): string {
  const n = Number.parseInt(hex.slice(1), 16);
  const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return luminance > 0.18 ? "#111" : "#fff";
}

export function avatar(
  channel: Pick<Channel, "name" | "icon" | "color">,
  size: "small" | "large" = "small",
): HTMLElement {
  if (channel.icon) {
    const mime = channel.icon.startsWith("/9j/") ? "image/jpeg" : "image/png";
    return h("img", {
      class: `avatar ${size}`,
      src: `data:${mime};base64,${channel.icon}`,
      alt: "",
      "aria-hidden": "true",
    });
  }
  const letter = [...channel.name.trim()][0]?.toLocaleUpperCase() ?? "#";
  const el = h("span", { class: `avatar ${size}`, "aria-hidden": "true" }, letter);
  const bg = channel.color ?? colorFor(channel.name);
  el.style.background = bg;
  el.style.color = channel.color ? textOn(channel.color) : "#fff";
  return el;
}
