// The browser project's globalSetup (vitest.config.ts): the web UI is built once per run, before
// any browser test file starts, and every file serves that build (examples/server/web/dist).
import { execFileSync } from "node:child_process";
import path from "node:path";

export default function setup(): void {
  const root = path.resolve(import.meta.dirname, "../..");
  execFileSync(process.execPath, [path.join(root, "examples/server/web/build.mjs")], { stdio: "ignore" });
}
