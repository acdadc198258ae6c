// The settings dialog: which runtime footer fields to show, whether answers stream, the theme,
// notifications on this browser, and (with login on) the paired devices.
import type { GatewayClient } from "chat-gateway/client";
import { infoDialog } from "../dialog.js";
import { h } from "../dom.js";
import { FOOTER_FIELDS, setFooterFields, setStreamingSetting, type FooterField } from "../settings.js";
import { setThemeSetting, themeSetting, type ThemeSetting } from "../theme.js";
import { devicesSection, pushSection } from "./settings-devices.js";

function themeSelect(): HTMLElement {
  const current = themeSetting();
  const options: Array<[ThemeSetting, string]> = [
    ["auto", "Follow the system"],
    ["light", "Light"],
    ["dark", "Dark"],
  ];
  const select = h(
    "select",
    { id: "setting-theme" },
    options.map(([value, label]) => h("option", { value, selected: value === current }, label)),
  );
  select.addEventListener("change", () => setThemeSetting(select.value as ThemeSetting));
  return h("label", { class: "field", for: "setting-theme" }, "Theme", select);
}

/**
 * Open the dialog; `footer` is changed in place and `onFooterChange` re-renders the messages.
 * `signedIn`: login is on, so there are paired devices to show.
 */
export function settingsDialog(
  client: GatewayClient,
  footer: Set<FooterField>,
  onFooterChange: () => void,
  signedIn = false,
): void {
  const boxes = FOOTER_FIELDS.map(({ field, label }) => {
    const input = h("input", { type: "checkbox", checked: footer.has(field), dataset: { field } });
    input.addEventListener("change", () => {
      if (input.checked) footer.add(field);
      else footer.delete(field);
      setFooterFields(footer);
      onFooterChange();
    });
    return h("label", { class: "check" }, input, ` ${label}`);
  });
  const streaming = h("input", { type: "checkbox", checked: client.streaming, id: "setting-streaming" });
  streaming.addEventListener("change", () => {
    setStreamingSetting(streaming.checked);
    void client.setStreaming(streaming.checked).catch(() => undefined);
  });
  infoDialog("Settings", [
    h("fieldset", null, h("legend", null, "Runtime footer: show"), ...boxes),
    h(
      "fieldset",
      null,
      h("legend", null, "Answers"),
      h("label", { class: "check" }, streaming, " Stream answers as they are written"),
    ),
    themeSelect(),
    pushSection(client),
    h("p", { class: "hint" }, "These settings belong to this browser."),
    ...(signedIn ? [devicesSection()] : []),
  ]);
}
