// The README's Quick start runs as written: its shell block sets up a fresh project with the packed
// package (the only substitution: the tarball for the name `chat-gateway`, and npm's cache first),
// then its server block and its client block run against each other as child processes. Only the
// port is changed, to a free one. A README edit that breaks a new user's first run fails here.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  freePort,
  npm,
  packedTarball,
  removeProject,
  root,
  run,
  startUntil,
  writeFiles,
} from "../fixtures/packed-project.js";
import { blocks } from "../fixtures/readme-blocks.js";

/** The shell block's commands: one per line or `&&`, comments dropped. */
function commands(shell: string): string[][] {
  return shell
    .split("\n")
    .map((line) => line.replace(/#.*/, ""))
    .flatMap((line) => line.split("&&"))
    .map((command) => command.trim().split(/\s+/))
    .filter((words) => words[0] !== "");
}

let project: string | undefined;
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) child.kill();
  await removeProject(project);
});

let readme = "";
let tarball = "";
beforeAll(async () => {
  readme = await readFile(join(root, "README.md"), "utf8");
  ({ project, tarball } = await packedTarball("cg-readme-"));
}, 600_000);

it("README - the Quick start's server and client blocks run as written and stream message.update", async () => {
  const [shell] = blocks(readme, "Quick start", "sh");
  const [server] = blocks(readme, "Quick start", "ts");
  const [client] = blocks(readme, "A device in TypeScript", "ts");
  expect(shell && server && client, "Quick start has a sh and a ts block; the device section a ts block").toBeTruthy();
  const runs = commands(shell!).filter(([tool]) => tool === "npx");
  for (const words of commands(shell!).filter(([tool]) => tool === "npm")) {
    const args = words.slice(1).map((w) => (w === "chat-gateway" ? tarball : w));
    if (args[0] === "install") args.push("--prefer-offline", "--no-audit", "--no-fund");
    await run(npm, args, { cwd: project! });
  }
  expect(runs.map((r) => r.join(" "))).toEqual(["npx tsx server.ts", "npx tsx client.ts"]);

  const port = String(await freePort());
  await writeFiles(project!, {
    "server.ts": server!.replaceAll("8787", port),
    "client.ts": client!.replaceAll("8787", port),
  });
  const tsx = join(project!, "node_modules/.bin/tsx");
  // The server says where it listens once it does; the client runs to its end by itself.
  const running = await startUntil(
    tsx,
    ["server.ts"],
    project!,
    new RegExp(`listening on ws://127\\.0\\.0\\.1:${port}/ws/gateway\n`),
  );
  children.push(running.child);
  const { stdout: done } = await run(tsx, ["client.ts"], { cwd: project!, timeout: 120_000 });
  expect(done.match(/so far:/g)!.length).toBeGreaterThan(1);
  expect(done).toMatch(/done: You asked: hello/);
}, 300_000);
