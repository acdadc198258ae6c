// `npm test`'s pretest: the system packages some tests drive for real, which npm never installs.
// Chromium for the browser tests (test/browser, through playwright-core) and nginx with openssl
// for the reverse proxy recipe (test/ops/nginx.test.ts). What is missing stops the run with what to
// install, instead of a suite in which those tests fail. It installs nothing itself: a test command
// that runs apt-get as root surprises whoever types it (CI installs them first: .ci/run).
// CHROMIUM_PATH names another Chromium or Chrome.
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";

/** True when `command` is an executable file on PATH. */
function onPath(command) {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, command)));
}

const chromium = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const packages = [
  {
    what: `Chromium at ${chromium}`,
    tests: "the browser tests (test/browser)",
    present: () => existsSync(chromium),
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
    how: ["  Debian or Ubuntu: sudo apt-get install -y nginx-light openssl   (or: sudo sh .ci/proxy-deps.sh)"],
    skip: "test/ops/nginx.test.ts",
  },
];

const missing = packages.filter((p) => !p.present());
if (missing.length > 0) {
  const lines = [];
  for (const p of missing)
    lines.push(`npm test needs ${p.what} for ${p.tests}. Install it, then run npm test again:`, ...p.how);
  const excludes = missing.map((p) => `--exclude '${p.skip}'`).join(" ");
  lines.push(
    `Without it, run the other tests alone: npx vitest run ${excludes}`,
    "(npm run test:unit needs none of it.)",
  );
  console.error(lines.join("\n"));
  process.exit(1);
}
