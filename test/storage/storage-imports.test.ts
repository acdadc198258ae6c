// The storage contract is data: a storage implementation takes types (from chat-gateway/storage,
// the contract's one home, and chat-gateway) and, at most, defineStorage. The built-in storages also share a few helpers that are not part of the
// contract (search ranking, the logger, the error of a full disk); each is listed with its reason.
// Read with the TypeScript parser, as test/import-cycles.test.ts does.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|mts)$/.test(path) && !path.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** The names a file imports as values (not `import type`, not `type X`) from the root entry, the storage kit or the protocol. */
function valueImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (!CORE_ENTRIES.includes(statement.moduleSpecifier.text)) continue;
    const clause = statement.importClause;
    if (!clause || clause.isTypeOnly) continue;
    if (clause.name) names.push("default");
    const bindings = clause.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) names.push("*");
    if (bindings && ts.isNamedImports(bindings))
      names.push(...bindings.elements.filter((e) => !e.isTypeOnly).map((e) => (e.propertyName ?? e.name).text));
  }
  return names;
}

const CORE_ENTRIES = ["chat-gateway", "chat-gateway/storage", "chat-gateway/protocol"];

/** Values a storage may import, beyond types. */
const ALLOWED: Record<string, string> = {
  defineStorage: "normalises the implementation (and does the core's part of the contract)",
  // The search capability must rank and cut snippets exactly as the core's fallback does.
  searchMessages: "search ranking",
  searchTerms: "search ranking",
  matchText: "search ranking",
  compareMatches: "search ranking",
  snippetAround: "search ranking",
  foldText: "search ranking",
  WORD_PATTERN: "search ranking",
  firstMatch: "search snippets from a bounded window",
  SNIPPET_SCAN: "search snippets from a bounded window",
  LIMITS: "the protocol's search limits",
  resolveLogger: "sql.js logs through the gateway's Logger",
  GatewayError: "sql.js words a full disk for the client, and rebuilds errors that crossed from its engine process",
  expectedChannelsHeld:
    "compares stored channels with what the gateway read, exactly as the core does (Change.expectChannels)",
  scheduleRunKey:
    "the key a schedule's latest run is compared on, made the same way in every storage (recordScheduleRun)",
  makePrivateDir:
    "a data folder made private, with the same warning, by sql.js, the fs media store and the example server",
};

/** What a storage once had to call, now the core's part of the contract. */
const CONTRACT_HELPERS = [
  "outboxRedactionKey",
  "messageRedactionKey",
  "channelRedactionKey",
  "heldByAnother",
  "mediaTakenError",
  "checkAdoption",
  "adoptionRefusedError",
  "NOTHING_ADOPTED",
];

describe("storage implementations and the data contract", () => {
  const storages = sourceFiles(join(root, "adapters/storage"));
  const example = sourceFiles(join(root, "examples/custom-storage"));

  it("imports - no built-in storage calls a core helper of the contract; other values are the listed shared helpers", () => {
    expect(storages.length).toBeGreaterThan(20);
    const found = storages.flatMap((file) => valueImports(file).map((name) => `${relative(root, file)}: ${name}`));
    expect(found.filter((line) => CONTRACT_HELPERS.some((name) => line.endsWith(`: ${name}`)))).toEqual([]);
    expect(found.filter((line) => !(line.split(": ")[1] in ALLOWED))).toEqual([]);
    // The contract itself holds: besides search, its limits, the channel comparison and the run key of schedules, the
    // memory storage (all the files of its folder) needs only defineStorage.
    const memory = sourceFiles(join(root, "adapters/storage/memory")).flatMap(valueImports);
    expect([...new Set(memory)].sort()).toEqual([
      "LIMITS",
      "defineStorage",
      "expectedChannelsHeld",
      "scheduleRunKey",
      "searchMessages",
    ]);
  });

  it("imports - the custom-storage example imports types only, defineStorage and the channel comparison", () => {
    expect(example.length).toBeGreaterThan(0);
    expect(example.flatMap(valueImports).sort()).toEqual(["defineStorage", "expectedChannelsHeld"]);
  });
});
