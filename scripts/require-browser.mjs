// `npm test`'s pretest: the browser tests (test/browser) drive Chromium through playwright-core,
// and npm never downloads a browser. When Chromium is missing, this installs Debian's package
// (.ci/browser-deps.sh) if it can do so without asking for a password (as root, or with
// passwordless sudo); otherwise it stops the run with what to install, instead of a suite in
// which every browser test fails. CHROMIUM_PATH names another Chromium or Chrome binary.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";

const DEFAULT_PATH = "/usr/bin/chromium";
const chromium = process.env.CHROMIUM_PATH || DEFAULT_PATH;

/** True when `command` is an executable file on PATH. */
function onPath(command) {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, command)));
}

/** Root, or sudo that will not prompt: an install that cannot hang on a password. */
function canInstall() {
  if (chromium !== DEFAULT_PATH || !onPath("apt-get")) return false;
  if (process.getuid?.() === 0) return true;
  return onPath("sudo") && spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0;
}

if (!existsSync(chromium) && canInstall()) {
  console.log(`npm test: Chromium is missing at ${chromium}; installing Debian's chromium for the browser tests`);
  spawnSync("sh", [join(import.meta.dirname, "../.ci/browser-deps.sh")], { stdio: "inherit" });
}
if (!existsSync(chromium)) {
  console.error(
    [
      `npm test needs Chromium at ${chromium} for the browser tests (test/browser).`,
      "Install it, then run npm test again:",
      "  Debian or Ubuntu: sudo apt-get install -y chromium   (or: sudo sh .ci/browser-deps.sh)",
      "  elsewhere: install Chromium or Chrome and set CHROMIUM_PATH to its binary",
      "Without it, run the other tests alone: npx vitest run --exclude 'test/browser/**'",
    ].join("\n"),
  );
  process.exit(1);
}
