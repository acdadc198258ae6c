// The repository's own npm scripts, as a new contributor meets them in a fresh clone: `npm test`
// says what the browser tests need before running them, and `npm pack` builds what it packs.
import { execFile } from "node:child_process";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "../..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "cg-scripts-"));
  dirs.push(dir);
  return dir;
}

it("npm test - without Chromium the pretest stops the run and says what to install", async () => {
  const missing = join(await tempDir(), "chromium");
  const failed = await run(npm, ["run", "pretest"], {
    cwd: root,
    env: { ...process.env, CHROMIUM_PATH: missing },
  }).then(
    () => undefined,
    (error: { code: number; stderr: string }) => error,
  );
  expect(failed?.code).toBe(1);
  expect(failed?.stderr).toContain(`npm test needs Chromium at ${missing}`);
  expect(failed?.stderr).toContain("sudo apt-get install -y chromium");
  expect(failed?.stderr).toContain("CHROMIUM_PATH");
  // With a browser there, the pretest lets the suite run.
  await run(npm, ["run", "pretest"], { cwd: root, env: { ...process.env, CHROMIUM_PATH: process.execPath } });
});

it("npm test - the pretest installs nothing, even as root with apt-get at hand: it says what is missing", async () => {
  // A PATH of stand-ins that note any call: apt-get, sudo and sh (which would run .ci/*-deps.sh);
  // openssl is not on it, so the nginx test's packages count as missing.
  const bin = await tempDir();
  const calls = join(bin, "calls");
  for (const name of ["apt-get", "sudo", "sh"]) {
    await writeFile(join(bin, name), `#!/bin/sh\necho ${name} "$@" >> ${calls}\n`);
    await chmod(join(bin, name), 0o755);
  }
  const failed = await run(process.execPath, [join(root, "scripts/require-test-packages.mjs")], {
    cwd: root,
    env: { ...process.env, PATH: bin, CHROMIUM_PATH: process.execPath },
  }).then(
    () => undefined,
    (error: { code: number; stderr: string }) => error,
  );
  expect(failed?.code).toBe(1);
  expect(failed?.stderr).toContain("npm test needs nginx at /usr/sbin/nginx, and openssl");
  expect(failed?.stderr).toContain("sudo apt-get install -y nginx-light openssl");
  await expect(readFile(calls, "utf8")).rejects.toThrow(/ENOENT/);
});

it("npm pack - builds before packing, so a fresh clone's tarball holds dist/", async () => {
  const { scripts } = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  };
  const dir = await tempDir();
  // The repository's prepack, with a build that stands in for tsup (which takes minutes).
  const build = `node -e "require('node:fs').mkdirSync('dist');require('node:fs').writeFileSync('dist/index.js','')"`;
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({
      name: "fresh-clone",
      version: "1.0.0",
      files: ["dist"],
      scripts: { prepack: scripts.prepack, build },
    }),
  );
  const { stdout } = await run(npm, ["pack", "--dry-run", "--json"], { cwd: dir });
  const [pack] = JSON.parse(stdout.slice(stdout.indexOf("["))) as Array<{ files: Array<{ path: string }> }>;
  expect(pack!.files.map((f) => f.path)).toContain("dist/index.js");
});
