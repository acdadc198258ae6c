// What the shipped pages tell a user to import is there: every `import { … } from "chat-gateway…"`
// of their code blocks, and every "`name` from `chat-gateway/…`" of their prose, names an export
// of that entry point as test/package/surface.txt lists it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { root } from "../fixtures/packed-project.js";

const PAGES = [
  "README.md",
  "docs/CUSTOM-STORAGE.md",
  "docs/CUSTOM-RUNTIME.md",
  "docs/MULTIPROCESS.md",
  "docs/PROTOCOL.md",
  "examples/server/README.md",
];

/** Each import path (`chat-gateway`, `chat-gateway/login`, …) and the names it exports. */
function surface(): Map<string, Set<string>> {
  const exports = new Map<string, Set<string>>();
  let names: Set<string> | undefined;
  for (const line of readFileSync(join(root, "test/package/surface.txt"), "utf8").split("\n")) {
    const entry = /^\.(\/\S+)? \(/.exec(line);
    if (entry) {
      names = new Set();
      exports.set(`chat-gateway${entry[1] ?? ""}`, names);
    } else if (line.trim() !== "") names!.add(line.trim().split(" ")[1]!);
  }
  return exports;
}

/** `[page, import path, name]` for each name a page says to take from the package. */
function named(page: string): Array<[string, string, string]> {
  const text = readFileSync(join(root, page), "utf8");
  const found: Array<[string, string, string]> = [];
  for (const [, list, from] of text.matchAll(/^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+"(chat-gateway[^"]*)"/gm))
    for (const item of list!.split(",")) {
      const name = item
        .trim()
        .replace(/^type\s+/, "")
        .split(/\s+as\s+/)[0]!;
      if (name !== "") found.push([page, from!, name]);
    }
  for (const [, name, from] of text.matchAll(/`([A-Za-z_$][\w$]*)[^`]*`\s+(?:of|from)\s+`(chat-gateway[a-z/-]*)`/g))
    found.push([page, from!, name!]);
  return found;
}

it("docs - every name the shipped pages import from the package is exported by that entry point", () => {
  const exports = surface();
  const all = PAGES.flatMap(named);
  expect(all.length).toBeGreaterThan(20);
  const missing = all.filter(([, from, name]) => !exports.get(from)?.has(name));
  expect(missing.map(([page, from, name]) => `${page}: ${name} from ${from}`)).toEqual([]);
});
