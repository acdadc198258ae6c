// Chromium for the browser tests: launched once per file, axe-core run inside a page, and a poll
// with room for a loaded machine.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { expect } from "vitest";

/** The browser the tests drive: `CHROMIUM_PATH`, or Debian's chromium (scripts/require-test-packages.mjs, run before `npm test`, says the same). */
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const require = createRequire(import.meta.url);
const root = path.resolve(import.meta.dirname, "../..");

/** Where screenshots go (ignored by git). */
export const resultsDir = path.join(root, "test-results");

/** Why the browser tests cannot run here, or undefined when Chromium is installed. */
export const missingChromium = existsSync(CHROMIUM)
  ? undefined
  : `Chromium is missing at ${CHROMIUM}: the browser tests need it. Install it with .ci/browser-deps.sh (apt-get install -y chromium), or set CHROMIUM_PATH to a Chromium or Chrome binary.`;

const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
}

/** A second browser profile: its own user-data-dir, so nothing (cookies, storage, service workers) is shared. */
export function launchProfile(userDataDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 900, height: 800 },
  });
}

/** Records what should never happen on a page: script errors, CSP refusals, dialogs. */
export function watchProblems(page: Page, problems: string[]): void {
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`CSP: ${message.text()}`);
  });
  page.on("dialog", (dialog) => {
    problems.push(`unexpected dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
}

/** Run axe-core in the page; the serious and critical violations, described. */
export async function axeViolations(page: Page): Promise<string[]> {
  const source = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  // Evaluated through the DevTools protocol, so the page's CSP (no inline scripts) stays on.
  await page.evaluate(source);
  // Contrast is judged on what a person sees once a transition ends: a message's actions fading
  // in under the pointer (opacity 0 to 1) measured half-way were a serious violation at random.
  // Transitions only: a spinner's animation never finishes.
  await page.evaluate(() =>
    Promise.all(
      document
        .getAnimations()
        .filter((animation) => animation instanceof CSSTransition)
        .map((animation) => animation.finished.catch(() => undefined)),
    ),
  );
  const violations = await page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run(
            ctx: Document,
            o: object,
          ): Promise<{
            violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }>;
          }>;
        };
      }
    ).axe;
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
    }));
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.targets.join(", ")}`);
}

/** expect.poll with room for a loaded machine. */
export function poll<T>(read: () => Promise<T> | T) {
  return expect.poll(read, { timeout: 10_000 });
}
