// The process and integration projects' globalSetup (vitest.config.ts): builds the example server,
// its CLIs and the test fixtures that run as processes once per run into test-results/example-server/,
// which their files start through exampleServerCommand and fixtureCommand
// (test/fixtures/example-server-bundle.ts) instead of tsx. Skipped when no source it holds changed
// since the last build (checking takes about 30 ms; a build about a second).
//
// The build must behave as the sources do. Each module of ours keeps its own `import.meta.url` (the
// source file's URL), so every file found beside a module (the bcrypt and snapshot workers, the web
// UI's dist/, package.json, sql.js's engine) is found where the sources find it: nothing is copied,
// so nothing can go stale. Dynamic imports become chunks of their own, as in the package's bin
// build, so a command loads what the sources' command loads, and an optional peer only when used.
import { readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import type { TestProject } from "vitest/node";
import { BUNDLE_DIR, BUNDLE_ENTRIES } from "../fixtures/example-server-bundle.js";

const root = join(import.meta.dirname, "../..");
const STAMP = "inputs.json";

/** Each input by modification time and size: what the build was made from. */
type Stamp = Record<string, string>;

async function fileStamp(files: string[]): Promise<Stamp> {
  const stamp: Stamp = {};
  for (const file of files) {
    const s = await stat(file).catch(() => undefined);
    stamp[file] = s ? `${s.mtimeMs} ${s.size}` : "missing";
  }
  return stamp;
}

/** True when the last build's inputs (and this file) are unchanged. */
async function upToDate(): Promise<boolean> {
  const last = await readFile(join(BUNDLE_DIR, STAMP), "utf8").then(
    (text) => JSON.parse(text) as Stamp,
    () => undefined,
  );
  if (!last) return false;
  const now = await fileStamp(Object.keys(last));
  return Object.entries(last).every(([file, value]) => now[file] === value);
}

/**
 * Replaces `import.meta.url` in our modules by the source file's URL. Any other `import.meta`
 * member fails the build, so that a new one is handled here rather than silently resolved against
 * the bundle.
 */
const sourceUrls: Plugin = {
  name: "source-urls",
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]s$/ }, async ({ path }) => {
      if (path.includes("/node_modules/")) return undefined;
      const text = await readFile(path, "utf8");
      const other = /import\.meta\.(?!url\b)\w+/.exec(text);
      if (other) throw new Error(`${path}: ${other[0]} is not handled by test/setup/example-server.ts`);
      return {
        contents: text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(path).href)),
        loader: /\.[cm]?ts$/.test(path) ? "ts" : "js",
      };
    });
  },
};

/** Builds the example server and the fixtures into BUNDLE_DIR unless the last build is up to date. */
async function buildExampleServer(): Promise<void> {
  if (await upToDate()) return;
  const aside = `${BUNDLE_DIR}.${process.pid}.tmp`;
  await rm(aside, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(Object.entries(BUNDLE_ENTRIES).map(([name, file]) => [name, join(root, file)])),
    outdir: aside,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // Packages stay imports, resolved from the repository's node_modules (one copy, as from source).
    packages: "external",
    // The chat-gateway specifiers resolve to the sources through tsconfig.json's paths.
    tsconfig: join(root, "tsconfig.json"),
    plugins: [sourceUrls],
    metafile: true,
    logLevel: "error",
  });
  const inputs = Object.keys(result.metafile.inputs).map((file) => join(root, file));
  const own = [join(root, "tsconfig.json"), import.meta.filename, join(root, "test/fixtures/example-server-bundle.ts")];
  const stamp = await fileStamp([...inputs, ...own]);
  await writeFile(join(aside, STAMP), JSON.stringify(stamp, null, 1));
  // Whole or not at all: a run that fails here keeps the last build and builds again next time.
  await rm(BUNDLE_DIR, { recursive: true, force: true });
  await rename(aside, BUNDLE_DIR);
}

export default async function setup(project: TestProject): Promise<void> {
  await buildExampleServer();
  // In watch mode a rerun after an edit starts what was edited.
  project.onTestsRerun(buildExampleServer);
}
