// The README's table of which import needs which package names exactly the optional peers of
// package.json, so a peer added or made a dependency without its row fails here.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { optionalPeers } from "../../optional-peers.mjs";
import { root } from "../fixtures/packed-project.js";

const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const readme = readFileSync(join(root, "README.md"), "utf8");

it("README - the table of packages to install names exactly the optional peers", () => {
  const table = readme.slice(readme.indexOf("| import | install beside chat-gateway |")).split("\n\n")[0]!;
  const rows = table
    .split("\n")
    .slice(2)
    .map((row) => row.split("|")[2] ?? "");
  // A row's second cell is "nothing …" or the packages to install, each in backticks.
  const named = rows
    .filter((cell) => !cell.trim().startsWith("nothing"))
    .flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  const toInstall = named.filter((name) => !name.startsWith("@ai-sdk/"));
  expect(rows.length).toBeGreaterThan(1);
  expect(new Set(toInstall)).toEqual(new Set(Object.keys(pkg.peerDependencies)));
  expect(new Set(Object.keys(optionalPeers))).toEqual(new Set(Object.keys(pkg.peerDependencies)));
});
