// No module of the core or an adapter may import itself through others: a circle makes load order
// decide whether a value is defined yet, and it is the first sign that two concepts share a home.
// Type-only imports count too (they are how such a circle starts). The graph is read with the
// TypeScript parser the project already builds with, so no extra dependency is needed.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { entrypoints } from "../entrypoints.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith(".ts") && !path.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** The file an import specifier names, as the build resolves it (package subpaths included). */
function target(from: string, specifier: string): string | undefined {
  const entry = entrypoints.find(
    (e) => (e.subpath === "." ? "chat-gateway" : `chat-gateway/${e.subpath.slice(2)}`) === specifier,
  );
  if (entry) return join(root, entry.source);
  if (specifier.startsWith("chat-gateway/"))
    return join(root, "adapters", specifier.slice("chat-gateway/".length), "index.ts");
  if (!specifier.startsWith(".")) return undefined;
  const file = resolve(dirname(from), specifier.replace(/\.js$/, ".ts"));
  return existsSync(file) ? file : join(file.replace(/\.ts$/, ""), "index.ts");
}

/** Each file's static imports and re-exports. */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
    const deps: string[] = [];
    for (const statement of source.statements) {
      if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
      const specifier = statement.moduleSpecifier;
      if (!specifier || !ts.isStringLiteral(specifier)) continue;
      const dep = target(file, specifier.text);
      if (dep) deps.push(dep);
    }
    graph.set(file, deps);
  }
  return graph;
}

/** Every circle found by a depth-first walk, each as the list of files from its start back to it. */
function circles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const found: string[][] = [];
  const visit = (file: string): void => {
    state.set(file, "open");
    path.push(file);
    for (const dep of graph.get(file) ?? []) {
      if (state.get(dep) === "open") found.push([...path.slice(path.indexOf(dep)), dep]);
      else if (!state.has(dep)) visit(dep);
    }
    path.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

/**
 * The core's folders, lowest first (src/README.md says what each holds). A file imports from its
 * own folder and from folders below its own, never from one above: the layers point one way.
 * "." is src/ itself: createGateway() and the root entry, which wire everything.
 */
const LAYERS = [
  "protocol",
  "contracts",
  "support",
  "options",
  "media",
  "storage",
  "admission",
  "outbox",
  "push",
  "channels",
  "turn",
  "asks",
  "lanes",
  "requests",
  "schedules",
  "connection",
  ".",
];

/** The folder of a file under src/ ("." for src/ itself), or undefined outside src/. */
function layerOf(file: string): string | undefined {
  const path = relative(join(root, "src"), file);
  if (path.startsWith("..")) return undefined;
  return path.includes("/") ? path.split("/")[0] : ".";
}

/** Every import from a folder to one above it, as "from -> to". */
function layerBreaches(graph: Map<string, string[]>): string[] {
  const breaches: string[] = [];
  for (const [file, deps] of graph) {
    const from = layerOf(file);
    if (from === undefined) continue;
    for (const dep of deps) {
      const to = layerOf(dep);
      if (to === undefined || to === from) continue;
      if (LAYERS.indexOf(to) > LAYERS.indexOf(from)) breaches.push(`${relative(root, file)} -> ${relative(root, dep)}`);
    }
  }
  return breaches;
}

describe("import graph", () => {
  it("layers - every folder of src/ has its place, and none imports from a folder above it", () => {
    const files = sourceFiles(join(root, "src"));
    const folders = new Set(files.map((file) => layerOf(file)!));
    expect([...folders].filter((folder) => !LAYERS.includes(folder))).toEqual([]);
    expect(layerBreaches(importGraph(files))).toEqual([]);
  });

  it("layers - admission/ reaches nothing of a turn, a lane or a request, not even through others", () => {
    // Admission decides whether a connection may start at all: it must stay cheap and know nothing of
    // what a connection later asks for, whatever the order of the layers above says.
    const graph = importGraph(sourceFiles(join(root, "src")));
    const start = [...graph.keys()].filter((file) => layerOf(file) === "admission");
    expect(start.length).toBeGreaterThan(0);
    const reached = new Set(start);
    for (const file of reached) for (const dep of graph.get(file) ?? []) reached.add(dep);
    const above = [...reached].filter((file) => ["turn", "lanes", "requests"].includes(layerOf(file) ?? ""));
    expect(above.map((file) => relative(root, file))).toEqual([]);
  });

  it("layers - the check finds an import that points up", () => {
    const low = join(root, "src/protocol/x.ts");
    const high = join(root, "src/connection/y.ts");
    expect(
      layerBreaches(
        new Map([
          [low, [high]],
          [high, [low]],
        ]),
      ),
    ).toEqual(["src/protocol/x.ts -> src/connection/y.ts"]);
  });

  it("has no circle in src/ or adapters/", () => {
    const files = [...sourceFiles(join(root, "src")), ...sourceFiles(join(root, "adapters"))];
    const found = circles(importGraph(files)).map((circle) => circle.map((f) => relative(root, f)).join(" -> "));
    expect(found).toEqual([]);
  });

  it("finds a circle, through a package subpath too", () => {
    // The check itself must be able to fail: a two-file circle and one closed through `chat-gateway`.
    const a = join(root, "src/a.ts");
    const b = join(root, "src/b.ts");
    const index = join(root, "src/index.ts");
    const adapter = join(root, "adapters/x/index.ts");
    expect(
      circles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual([[a, b, a]]);
    expect(target(adapter, "chat-gateway")).toBe(index);
    expect(
      circles(
        new Map([
          [index, [adapter]],
          [adapter, [target(adapter, "chat-gateway")!]],
        ]),
      ),
    ).toHaveLength(1);
  });
});
