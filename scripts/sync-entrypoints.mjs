// Writes package.json "exports" and typedoc.json "entryPoints" from entrypoints.mjs.
// Run after adding an entry point: node scripts/sync-entrypoints.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { entrypoints, outName } from "../entrypoints.mjs";

export function exportsFor(list) {
  return Object.fromEntries(
    list.map((e) => {
      const out = outName(e.subpath);
      return [
        e.subpath,
        {
          import: { types: `./dist/${out}.d.ts`, default: `./dist/${out}.js` },
          require: { types: `./dist/${out}.d.cts`, default: `./dist/${out}.cjs` },
        },
      ];
    }),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const pkg = JSON.parse(readFileSync("package.json", "utf8"));
  pkg.exports = { ...exportsFor(entrypoints), "./package.json": "./package.json" };
  writeFileSync("package.json", `${JSON.stringify(pkg, null, 2)}\n`);
  const typedoc = JSON.parse(readFileSync("typedoc.json", "utf8"));
  typedoc.entryPoints = entrypoints.map((e) => e.source);
  writeFileSync("typedoc.json", `${JSON.stringify(typedoc, null, 2)}\n`);
  console.log(`synced ${entrypoints.length} entry points`);
}
