// No function of the core, an adapter or an example may run over 80 lines: a longer one hides a
// concept that deserves a name (a helper, a class, a file). Closures count as part of the function
// that holds them, so a factory returning an object of methods is measured as a whole. Read with
// the TypeScript parser the project already builds with, as test/import-cycles.test.ts does.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const MAX_LINES = 80;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules" || name === "dist") continue;
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith(".ts") && !path.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

interface LongFunction {
  where: string;
  name: string;
  lines: number;
}

/** Every function-like node with a body longer than `max` lines, from its first token to its end. */
function longFunctions(fileName: string, text: string, max = MAX_LINES): LongFunction[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : "(anonymous)";
      if (lines > max) found.push({ where: `${fileName}:${first + 1}`, name, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("function length", () => {
  const found = ["src", "adapters", "examples"].flatMap((dir) =>
    sourceFiles(join(root, dir)).flatMap((file) => {
      const path = relative(root, file).split("\\").join("/");
      return longFunctions(path, readFileSync(file, "utf8"));
    }),
  );

  it(`no function in src/, adapters/ or examples/ runs over ${MAX_LINES} lines`, () => {
    const over = found.map((f) => `${f.where} ${f.name}: ${f.lines} lines`);
    expect(over).toEqual([]);
  });

  it("finds a function over the limit, a nested one and an arrow, and passes one at the limit", () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const text = [
      `export function short() {\n${body(MAX_LINES)}\n}`,
      `export function long() {\n${body(MAX_LINES + 1)}\n}`,
      `export const arrow = () => {\n${body(MAX_LINES + 5)}\n};`,
      `class C {\n  method() {\n${body(MAX_LINES + 2)}\n  }\n}`,
    ].join("\n");
    const hits = longFunctions("sample.ts", text).map((f) => `${f.name} ${f.lines}`);
    expect(hits).toEqual([`long ${MAX_LINES + 1}`, `(anonymous) ${MAX_LINES + 5}`, `method ${MAX_LINES + 2}`]);
  });
});
