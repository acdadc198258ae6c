// The flag tables of the example server (README "The example server" and its own page,
// examples/server/README.md) say what the bin's `--help` says: the same flags and the same environment variables, so neither
// table lists a flag the server refuses nor misses one it takes.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseConfig, UsageError } from "../examples/server/config.js";

const root = join(import.meta.dirname, "..");

interface Flags {
  flags: string[];
  variables: string[];
}

const sorted = (items: Iterable<string>) => [...new Set(items)].sort();

/** Flags and variables of the help's option lines (`  --port N   … [PORT] …`); `--help` itself aside. */
function fromHelp(help: string): Flags {
  const options = help.slice(help.indexOf("Options"));
  return {
    flags: sorted([...options.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]!).filter((f) => f !== "--help")),
    variables: sorted([...options.matchAll(/\[([A-Z_]+)(?:=1)?\]/g)].map((m) => m[1]!)),
  };
}

/** Flags and variables of the first table after `heading` whose header starts `| flag |`. */
function fromTable(markdown: string, heading: string): Flags {
  const section = markdown.slice(markdown.indexOf(heading));
  const table = section.slice(section.indexOf("| flag |")).split("\n\n")[0]!;
  const rows = table
    .split("\n")
    .slice(2)
    .map((row) => row.split("|").slice(1, 3));
  const ticked = (cell: string | undefined, pattern: RegExp) => [...(cell ?? "").matchAll(pattern)].map((m) => m[1]!);
  return {
    flags: sorted(rows.flatMap(([flag]) => ticked(flag, /`(--[a-z-]+)`/g))),
    variables: sorted(rows.flatMap(([, variable]) => ticked(variable, /`([A-Z_]+)(?:=1)?`/g))),
  };
}

describe("example server flags", async () => {
  // From the sources through tsx, as `npm start` and `npm run cli` run it: the one place the tests
  // still pay for that path; the others start test/fixtures/example-server-bundle.ts's build.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "examples/server/main.ts", "--help"],
    { cwd: root },
  );
  const help = fromHelp(stdout);

  it("example server flags - --help lists flags and variables (the parse found them)", () => {
    expect(help.flags).toContain("--port");
    expect(help.variables).toContain("GATEWAY_ALLOW_OPEN");
  });

  it("example server flags - the README's table has exactly the flags and variables of --help", async () => {
    const readme = await readFile(join(root, "README.md"), "utf8");
    expect(fromTable(readme, "## The example server")).toEqual(help);
  });

  it("example server flags - examples/server/README.md has exactly the flags and variables of --help", async () => {
    const page = await readFile(join(root, "examples/server/README.md"), "utf8");
    expect(fromTable(page, "## Configuration")).toEqual(help);
  });
});

describe("example server flags - --push-after-ms", () => {
  it("example server flags - --push-after-ms and GATEWAY_PUSH_AFTER_MS set pushAfterMs, the flag first; unset leaves the gateway's default", () => {
    expect(parseConfig(["--push-after-ms", "5000"], {}).pushAfterMs).toBe(5000);
    expect(parseConfig(["--push-after-ms=0"], {}).pushAfterMs).toBe(0);
    expect(parseConfig([], { GATEWAY_PUSH_AFTER_MS: "120000" }).pushAfterMs).toBe(120_000);
    expect(parseConfig(["--push-after-ms", "1"], { GATEWAY_PUSH_AFTER_MS: "120000" }).pushAfterMs).toBe(1);
    expect(parseConfig([], {}).pushAfterMs).toBeUndefined();
    expect(parseConfig([], { GATEWAY_PUSH_AFTER_MS: "" }).pushAfterMs).toBeUndefined();
  });

  it.each(["-1", "1.5", "soon", "86400001", "1e12"])(
    "example server flags - --push-after-ms %s is a usage error naming the range",
    (value) => {
      expect(() => parseConfig(["--push-after-ms", value], {})).toThrow(UsageError);
      expect(() => parseConfig([], { GATEWAY_PUSH_AFTER_MS: value })).toThrow(
        /push-after-ms must be an integer from 0 to 86400000/,
      );
    },
  );
});
