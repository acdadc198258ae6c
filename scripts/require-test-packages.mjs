// `npm test`'s pretest: the system packages some tests drive for real, which npm never installs.
// Chromium for the browser tests (test/browser, through playwright-core) and nginx with openssl
// for the reverse proxy recipe (test/ops/nginx.test.ts). What is missing is installed from
// Debian's packages (.ci/browser-deps.sh, .ci/proxy-deps.sh) when that needs no password (as
// root, or with passwordless sudo); what is still missing stops the run with what to install,
// instead of a suite in which those tests fail. CHROMIUM_PATH names another Chromium or Chrome.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";

/** True when `command` is an executable file on PATH. */
function onPath(command) {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, command)));
}

/** Root, or sudo that will not prompt: an install that cannot hang on a password. */
function canInstall() {
  if (!onPath("apt-get")) return false;
  if (process.getuid?.() === 0) return true;
  return onPath("sudo") && spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0;
}

const chromium = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const packages = [
  {
    what: `Chromium at ${chromium}`,
    tests: "the browser tests (test/browser)",
    present: () => existsSync(chromium),
    // Another browser named by CHROMIUM_PATH is the user's to install.
    installer: process.env.CHROMIUM_PATH ? undefined : "browser-deps.sh",
    how: [
      "  Debian or Ubuntu: sudo apt-get install -y chromium   (or: sudo sh .ci/browser-deps.sh)",
      "  elsewhere: install Chromium or Chrome and set CHROMIUM_PATH to its binary",
    ],
    skip: "test/browser/**",
  },
  {
    what: "nginx at /usr/sbin/nginx, and openssl",
    tests: "the reverse proxy test (test/ops/nginx.test.ts)",
    present: () => existsSync("/usr/sbin/nginx") && onPath("openssl"),
    installer: "proxy-deps.sh",
    how: ["  Debian or Ubuntu: sudo apt-get install -y nginx-light openssl   (or: sudo sh .ci/proxy-deps.sh)"],
    skip: "test/ops/nginx.test.ts",
  },
];

const missing = [];
for (const p of packages) {
  if (!p.present() && p.installer && canInstall()) {
    console.log(`npm test: ${p.what} is missing for ${p.tests}; installing it from Debian's packages`);
    spawnSync("sh", [join(import.meta.dirname, "../.ci", p.installer)], { stdio: "inherit" });
  }
  if (!p.present()) missing.push(p);
}
if (missing.length > 0) {
  const lines = [];
  for (const p of missing)
    lines.push(`npm test needs ${p.what} for ${p.tests}. Install it, then run npm test again:`, ...p.how);
  const excludes = missing.map((p) => `--exclude '${p.skip}'`).join(" ");
  lines.push(`Without it, run the other tests alone: npx vitest run ${excludes}`);
  console.error(lines.join("\n"));
  process.exit(1);
}
