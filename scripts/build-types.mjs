// The package's declarations: tsc emits one .d.ts per module (tsconfig.build.json) into
// dist/types/, and each entry point gets two stub files where its bundled declarations used to be,
// dist/<name>.d.ts and dist/<name>.d.cts, re-exporting its module. tsup's declaration bundling did
// the same job in 100–175 s of rollup; tsc takes 10–15 s.
//
// CommonJS consumers get a copy, dist/types-cjs/, beside a package.json saying "commonjs": the
// package is "type": "module", so dist/types/*.d.ts are ES modules to TypeScript. A .d.cts stub
// re-exporting those passes under TypeScript 5.9's nodenext (which allows require of ES modules),
// but fails for every entry under node16 (TS1479, a CommonJS file importing an ES module); the copy
// keeps each side in its own module system, as the bundled .d.ts/.d.cts pair did.
//
// Run after tsup (`npm run build`); reads the entries from entrypoints.mjs.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { entrypoints, outName } from "../entrypoints.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = `${root}dist`;
const ESM = "types";
const CJS = "types-cjs";

/** "adapters/storage/memory/index.ts" -> "adapters/storage/memory/index.js", the emitted module's specifier. */
const emitted = (source) => source.replace(/\.ts$/, ".js");

/** The stub of one entry: `export * from` its module under `dir`, relative to dist/<name>.d.ts. */
function stub(name, source, dir) {
  const from = relative(dirname(`${dist}/${name}`), `${dist}/${dir}/${emitted(source)}`)
    .split(sep)
    .join("/");
  return `export * from "./${from}";\n`.replace("./../", "../");
}

/**
 * `export *` passes on every name but `default`: an entry with a default export would lose it in
 * its stub, so the build stops instead (none has one; this keeps it so).
 */
function refuseDefaultExports() {
  for (const { source } of entrypoints) {
    const text = readFileSync(`${dist}/${ESM}/${source.replace(/\.ts$/, ".d.ts")}`, "utf8");
    if (/\bexport\s+default\b|\bas\s+default\b|\bexport\s*=/.test(text)) {
      throw new Error(`${source} has a default export, which its declaration stub would drop`);
    }
  }
}

rmSync(`${dist}/${ESM}`, { recursive: true, force: true });
rmSync(`${dist}/${CJS}`, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", `${root}tsconfig.build.json`, "--outDir", `${dist}/${ESM}`], {
  stdio: "inherit",
});
refuseDefaultExports();
cpSync(`${dist}/${ESM}`, `${dist}/${CJS}`, { recursive: true });
writeFileSync(`${dist}/${CJS}/package.json`, `${JSON.stringify({ type: "commonjs" })}\n`);
for (const { subpath, source } of entrypoints) {
  const name = outName(subpath);
  mkdirSync(dirname(`${dist}/${name}`), { recursive: true });
  writeFileSync(`${dist}/${name}.d.ts`, stub(name, source, ESM));
  writeFileSync(`${dist}/${name}.d.cts`, stub(name, source, CJS));
}
