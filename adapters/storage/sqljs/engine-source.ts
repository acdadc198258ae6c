// Only when chat-gateway runs from its TypeScript sources (its own tests and benchmarks): the
// database process's entry bundled to one plain module with esbuild, so that each start costs a
// plain `node` start rather than tsx's loader (about a second more per process on a busy machine).
// The build never loads this file; it starts dist/storage/sqljs-engine.js instead.
import { createHash } from "node:crypto";
import { copyFile, mkdir, readdir, rename, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** Every source file the bundle holds, by modification time and size: the bundle's cache key. */
async function sourcesKey(): Promise<string> {
  const hash = createHash("sha256");
  for (const dir of ["src", "adapters/storage/sqljs"]) {
    const names = (await readdir(join(root, dir), { recursive: true })).filter((n) => /\.(ts|mjs)$/.test(n)).sort();
    for (const name of names) {
      const s = await stat(join(root, dir, name));
      hash.update(`${dir}/${name} ${s.mtimeMs} ${s.size}\n`);
    }
  }
  return hash.digest("hex").slice(0, 16);
}

let bundled: Promise<string> | undefined;

/** The path of the bundled entry, built once per set of sources and shared by every process. */
export function engineBundle(): Promise<string> {
  bundled ??= (async () => {
    // Inside the project's node_modules, so that the bundle resolves sql.js as the sources do.
    const dir = join(root, "node_modules/.cache/chat-gateway");
    const file = join(dir, `sqljs-engine-${await sourcesKey()}.mjs`);
    if (
      await stat(file).then(
        () => true,
        () => false,
      )
    )
      return file;
    await mkdir(dir, { recursive: true });
    // The snapshot writer is started from beside the module that starts it, as in the build.
    const writer = join(dir, "sqljs-snapshot-worker.mjs");
    await copyFile(join(root, "adapters/storage/sqljs/sqljs-snapshot-worker.mjs"), `${writer}.${process.pid}.tmp`);
    await rename(`${writer}.${process.pid}.tmp`, writer);
    const tmp = `${file}.${process.pid}.tmp`;
    await build({
      entryPoints: [join(root, "adapters/storage/sqljs/engine-main.ts")],
      outfile: tmp,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      external: ["sql.js"],
      alias: {
        "chat-gateway": join(root, "src/index.ts"),
        "chat-gateway/protocol": join(root, "src/protocol/index.ts"),
        "chat-gateway/storage": join(root, "src/storage/index.ts"),
      },
      logLevel: "silent",
    });
    // Whole or not at all, should several processes build it at once.
    await rename(tmp, file);
    return file;
  })();
  return bundled;
}
