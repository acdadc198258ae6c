// Loaded by index.html as a classic script in <head>, before anything is painted: the theme is
// set before the first frame, so a dark system never sees the light page flash while app.js
// (a module, which runs only after parsing) loads. An external file, as the CSP allows no inline script.
import { applyTheme } from "./theme.js";

applyTheme();
