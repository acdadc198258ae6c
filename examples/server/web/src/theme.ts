// Light or dark colours: the system's choice (prefers-color-scheme, followed live) unless this
// browser's setting overrides it. styles.css keys its dark palette on <html data-theme="dark">.
export type ThemeSetting = "auto" | "light" | "dark";

const THEME_KEY = "chat-gateway:theme";
const systemDark = () => window.matchMedia("(prefers-color-scheme: dark)");

export function themeSetting(): ThemeSetting {
  try {
    const value = localStorage.getItem(THEME_KEY);
    return value === "light" || value === "dark" ? value : "auto";
  } catch {
    return "auto";
  }
}

/** Paint the page in the theme the setting (or the system) asks for. */
export function applyTheme(setting: ThemeSetting = themeSetting()): void {
  const dark = setting === "dark" || (setting === "auto" && systemDark().matches);
  document.documentElement.dataset.theme = dark ? "dark" : "light";
}

export function setThemeSetting(setting: ThemeSetting): void {
  try {
    localStorage.setItem(THEME_KEY, setting);
  } catch {
    // Private mode: the theme lasts for this page only.
  }
  applyTheme(setting);
}

/** Apply the theme now and again whenever the system switches between light and dark. */
export function followTheme(): void {
  applyTheme();
  systemDark().addEventListener("change", () => applyTheme());
}
