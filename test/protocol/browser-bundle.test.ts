// chat-gateway/protocol must load in a browser: esbuild bundles it for `platform: "browser"`, which
// fails on any `node:*` import or Node built-in, and the bundle must not lean on Node's globals.
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

async function bundle(entry: string): Promise<string> {
  const result = await esbuild.build({
    stdin: { contents: entry, resolveDir: root, loader: "ts" },
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: ["es2022"],
    alias: { "chat-gateway/protocol": `${root}src/protocol/index.ts` },
    minify: true,
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

describe("protocol - browser importability", () => {
  // Minified, so comments are gone; free names such as `Buffer` are never renamed.
  it("bundles for the browser with every export, and no Node global", async () => {
    const text = await bundle(`export * from "chat-gateway/protocol";`);
    expect(text).toContain("parseServerFrame");
    expect(text).not.toMatch(/\b(Buffer|process|require|__dirname|setImmediate)\b/);
  });

  it("the check fails on a Node import, so it can tell", async () => {
    await expect(bundle(`import "node:crypto"; export * from "chat-gateway/protocol";`)).rejects.toThrow(/node:crypto/);
  });
});
