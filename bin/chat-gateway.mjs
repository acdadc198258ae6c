#!/usr/bin/env node
// The example server and its user CLI, from the package build: `chat-gateway --help`.
// In a git clone the build does not exist yet: say how to make it instead of a stack trace.
import { existsSync } from "node:fs";

const built = new URL("../dist/bin/chat-gateway.js", import.meta.url);
if (!existsSync(built)) {
  console.error(
    "chat-gateway: the package is not built (dist/ is missing).\n" +
      "In a clone, run `npm run build` first, or use `npm start` and `npm run cli -- user …`, which run from source.",
  );
  process.exit(1);
}
await import(built.href);
