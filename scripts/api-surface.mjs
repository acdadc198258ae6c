// The exported names of every public entry point, values and types apart, as one text a test
// compares with the committed test/package/surface.txt: a change of the public surface is then a
// reviewed diff. `node scripts/api-surface.mjs --write` rewrites the file after a deliberate change.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { entrypoints } from "../entrypoints.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
export const surfaceFile = `${root}test/package/surface.txt`;

/** Every entry's exports, sorted, as `subpath`, then `  value name` and `  type name` lines. */
export function apiSurface() {
  const config = ts.getParsedCommandLineOfConfigFile(
    `${root}tsconfig.json`,
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  const program = ts.createProgram(
    entrypoints.map((e) => `${root}${e.source}`),
    config.options,
  );
  const checker = program.getTypeChecker();
  const lines = [];
  for (const entry of entrypoints) {
    const file = program.getSourceFile(`${root}${entry.source}`);
    const names = checker.getExportsOfModule(checker.getSymbolAtLocation(file)).map((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const kind = target.flags & ts.SymbolFlags.Value ? "value" : "type";
      return `  ${kind} ${symbol.name}`;
    });
    const values = names.filter((n) => n.startsWith("  value")).length;
    lines.push(`${entry.subpath} (${values} values, ${names.length - values} types)`, ...names.sort());
  }
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = apiSurface();
  if (process.argv.includes("--write")) writeFileSync(surfaceFile, text);
  else process.stdout.write(text === readFileSync(surfaceFile, "utf8") ? "surface unchanged\n" : text);
}
