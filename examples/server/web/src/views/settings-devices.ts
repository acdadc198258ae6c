// Settings sections of docs/PROTOCOL.md §16: push notifications on this browser (Web Push), and
// the user's paired devices: listed, revoked, and "Pair a device" with the QR code of the pairing URL.
import qrcode from "qrcode-generator";
import type { GatewayClient } from "chat-gateway/client";
import { listDevices, pairDevice, revokeDevice, type PairedDevice } from "../api.js";
import { clear, h } from "../dom.js";
import { currentSubscription, pushSupported, subscribePush, unsubscribePush } from "../pwa.js";

const SVG = "http://www.w3.org/2000/svg";

/** The QR code of `text` as an SVG drawn with DOM calls (the UI sets no innerHTML but Markdown's). */
export function qrSvg(text: string): SVGSVGElement {
  const code = qrcode(0, "M");
  code.addData(text);
  code.make();
  const size = code.getModuleCount();
  const margin = 4;
  let d = "";
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) if (code.isDark(row, col)) d += `M${col + margin} ${row + margin}h1v1h-1z`;
  }
  const svg = document.createElementNS(SVG, "svg");
  const full = size + 2 * margin;
  svg.setAttribute("viewBox", `0 0 ${full} ${full}`);
  svg.setAttribute("class", "qr");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "QR code of the pairing link");
  const background = document.createElementNS(SVG, "rect");
  for (const [name, value] of [
    ["width", full],
    ["height", full],
    ["fill", "#fff"],
  ])
    background.setAttribute(String(name), String(value));
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", d);
  path.setAttribute("fill", "#000");
  svg.append(background, path);
  return svg;
}

/** "Notify me on this browser": subscribes on a click (browsers ask permission only then). */
export function pushSection(client: GatewayClient): HTMLElement {
  const status = h("p", { class: "hint", role: "status" });
  if (!pushSupported()) {
    return h(
      "fieldset",
      null,
      h("legend", null, "Notifications"),
      h(
        "p",
        { class: "hint" },
        "This browser cannot receive push notifications (it needs a service worker and Web Push, over https or on localhost).",
      ),
    );
  }
  const box = h("input", { type: "checkbox", id: "setting-push" });
  void currentSubscription().then(
    (sub) => (box.checked = sub !== undefined),
    () => undefined,
  );
  box.addEventListener("change", () => {
    const on = box.checked;
    status.textContent = on ? "Subscribing…" : "";
    box.disabled = true;
    const work = on
      ? subscribePush().then((webpush) => client.registerPush({ webpush }))
      : client.registerPush({ webpush: null }).then(() => unsubscribePush());
    work
      .then(
        () =>
          (status.textContent = on
            ? "This browser gets a notification when an answer or a question waits for you."
            : "Notifications are off for this browser."),
        (error: unknown) => {
          box.checked = !on;
          status.textContent = (error as Error).message;
        },
      )
      .finally(() => (box.disabled = false));
  });
  return h(
    "fieldset",
    null,
    h("legend", null, "Notifications"),
    h("label", { class: "check" }, box, " Notify me on this browser when an answer waits"),
    status,
  );
}

function when(seconds: number): string {
  return new Date(seconds * 1000).toLocaleString();
}

function deviceRow(device: PairedDevice, refresh: () => void, status: HTMLElement): HTMLElement {
  const revoke = h("button", { type: "button", class: "danger" }, "Revoke");
  revoke.setAttribute("aria-label", `Revoke ${device.name}`);
  revoke.addEventListener("click", () => {
    revoke.disabled = true;
    revokeDevice(device.device_id).then(refresh, (error: unknown) => {
      revoke.disabled = false;
      status.textContent = `Could not revoke: ${(error as Error).message}`;
    });
  });
  return h(
    "li",
    { class: "device", dataset: { deviceId: device.device_id } },
    h("span", { class: "device-name" }, device.name),
    h("span", { class: "hint" }, `paired ${when(device.created)}, last seen ${when(device.last_seen)}`),
    revoke,
  );
}

/** The pairing code's QR code, its link and the code as text. */
function pairingView(code: { code: string; url: string; expires_at: number }): HTMLElement {
  return h(
    "div",
    { class: "pairing" },
    qrSvg(code.url),
    h(
      "p",
      null,
      "Scan this with the new device, or open ",
      h("a", { href: code.url, class: "pair-url" }, code.url),
      " there.",
    ),
    h(
      "p",
      null,
      "Code: ",
      h("strong", { class: "pair-code" }, code.code),
      ` (valid until ${new Date(code.expires_at * 1000).toLocaleTimeString()}, once)`,
    ),
  );
}

/** Paired devices of the signed-in user, and "Pair a device". */
export function devicesSection(): HTMLElement {
  const list = h("ul", { class: "devices" });
  const status = h("p", { class: "hint", role: "status" });
  const pairing = h("div");
  const refresh = () => {
    listDevices().then(
      ({ devices }) => {
        clear(list);
        if (devices.length === 0) list.append(h("li", { class: "hint" }, "No paired devices."));
        for (const device of devices) list.append(deviceRow(device, refresh, status));
      },
      (error: unknown) => (status.textContent = `Could not list devices: ${(error as Error).message}`),
    );
  };
  const pair = h("button", { type: "button" }, "Pair a device");
  pair.addEventListener("click", () => {
    pairDevice().then(
      (code) => {
        clear(pairing);
        pairing.append(pairingView(code));
      },
      (error: unknown) => (status.textContent = `Could not pair: ${(error as Error).message}`),
    );
  });
  refresh();
  return h(
    "fieldset",
    null,
    h("legend", null, "Paired devices"),
    list,
    pair,
    pairing,
    status,
    h(
      "p",
      { class: "hint" },
      "A paired device stays signed in without a password until you revoke it (or it goes unused for 90 days).",
    ),
  );
}
