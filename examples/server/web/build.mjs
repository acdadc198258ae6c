// Builds the web UI into ./dist with esbuild: one ES module bundle (no inline script, no eval, so
// it runs under the server's `default-src 'self'` CSP), the stylesheet and the page; the service
// worker, the manifest and its PNG icons (icon-192.png, icon-512.png: icon.svg's speech bubble on
// the blue square, full-bleed with the bubble in the middle 60% for any launcher mask) make it an
// installable app.
// node examples/server/web/build.mjs [--watch]
import { copyFile, mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const out = here("./dist/");

await mkdir(out, { recursive: true });
const options = {
  entryPoints: [here("./src/main.ts")],
  bundle: true,
  format: "esm",
  target: ["es2022"],
  platform: "browser",
  minify: true,
  sourcemap: true,
  outfile: `${out}app.js`,
  // The client and the protocol module are the package's own subpaths; in this repository they are
  // built from source. A Node import in either fails this browser build.
  alias: {
    "chat-gateway/client": here("../../../adapters/client/index.ts"),
    "chat-gateway/protocol": here("../../../src/protocol/index.ts"),
  },
  // The client imports `ws` only where there is no global WebSocket, which never happens here.
  external: ["ws"],
  logLevel: "warning",
};
// The theme before first paint (src/theme-boot.ts): a classic script, so it blocks the page until it ran.
const themeOptions = {
  ...options,
  entryPoints: [here("./src/theme-boot.ts")],
  format: "iife",
  sourcemap: false,
  outfile: `${out}theme.js`,
};
// The service worker: a classic script at the root, so its scope is the whole app.
const workerOptions = { ...options, entryPoints: [here("./src/sw.ts")], format: "iife", outfile: `${out}sw.js` };
await Promise.all([
  copyFile(here("./icon-192.png"), `${out}icon-192.png`),
  copyFile(here("./icon-512.png"), `${out}icon-512.png`),
  copyFile(here("./manifest.webmanifest"), `${out}manifest.webmanifest`),
]);
await Promise.all([
  copyFile(here("./index.html"), `${out}index.html`),
  copyFile(here("./styles.css"), `${out}styles.css`),
  copyFile(here("./code-blocks.css"), `${out}code-blocks.css`),
  copyFile(here("./icon.svg"), `${out}icon.svg`),
]);
if (process.argv.includes("--watch")) {
  for (const each of [options, themeOptions, workerOptions]) await (await esbuild.context(each)).watch();
  console.log("watching examples/server/web/src …");
} else {
  await Promise.all([esbuild.build(options), esbuild.build(themeOptions), esbuild.build(workerOptions)]);
  console.log("web UI built into examples/server/web/dist");
}
