// docs/CUSTOM-RUNTIME.md shows the example runtime that custom-runtime-example.test.ts runs
// through the kit: the two must not drift apart.
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, test } from "vitest";
import { start } from "../../examples/custom-runtime/main.js";
import { Client } from "../gateway/harness.js";

const root = join(import.meta.dirname, "../..");

test("docs/CUSTOM-RUNTIME.md - shows examples/custom-runtime/runtime.ts as it is, and the kit file it documents", async () => {
  const doc = await readFile(join(root, "docs/CUSTOM-RUNTIME.md"), "utf8");
  const source = await readFile(join(root, "examples/custom-runtime/runtime.ts"), "utf8");
  const shown = /<!-- examples\/custom-runtime\/runtime\.ts -->\n```ts\n([\s\S]*?)```/.exec(doc)?.[1];
  expect(shown).toBe(source);
  const kitTest = await readFile(join(root, "test/runtime/custom-runtime-example.test.ts"), "utf8");
  const declared = /^const text[\s\S]*?\n};\n/m.exec(kitTest)?.[0];
  expect(declared && doc.includes(declared)).toBe(true);
  const protocol = await readFile(join(root, "docs/PROTOCOL.md"), "utf8");
  const sections = new Set([...protocol.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((m) => m[1]));
  const cited = [...doc.matchAll(/docs\/PROTOCOL\.md\s+§(\d+(?:\.\d+)?)/g)].map((m) => m[1]);
  expect(cited.length).toBeGreaterThan(5);
  for (const section of cited) expect(sections, `§${section} cited`).toContain(section);
});

test("examples/custom-runtime/main.ts - serves the calculator over WebSocket", async () => {
  const server = await start({ port: 0 });
  try {
    const device = await Client.connect(server.url);
    const chat = (await device.request("channel.list")).payload.channels[0].chat_id;
    const { final } = await device.say({ chat_id: chat, text: "What is 6 * 7?" });
    expect(final.payload).toMatchObject({ final_text: "6 * 7 = 42", status: "complete", model: "calculator-1" });
    expect(device.of("tool.end")[0].payload).toMatchObject({ name: "calculate", output: 42, ok: true });
    await device.close();
  } finally {
    await server.close();
  }
});

test("docs/CUSTOM-RUNTIME.md - starts from the AI SDK binding with includeUsage, and its example ships in the package", async () => {
  const doc = await readFile(join(root, "docs/CUSTOM-RUNTIME.md"), "utf8");
  const binding = doc.slice(0, doc.indexOf("## The contract"));
  expect(binding).toContain('import { aiSdkRuntime } from "chat-gateway/runtime/ai-sdk"');
  expect(binding).toContain("includeUsage: true");
  expect(binding).toContain("(../examples/ai-sdk-agent/main.ts)");
  const example = await readFile(join(root, "examples/ai-sdk-agent/main.ts"), "utf8");
  expect(example).toContain("includeUsage: true");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const [pack] = JSON.parse(
    execFileSync(npm, ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: root, encoding: "utf8" }),
  );
  expect(pack.files.map((f: { path: string }) => f.path)).toContain("examples/ai-sdk-agent/main.ts");
});
