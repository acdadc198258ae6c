// The example server when its sql.js database process dies, run as a person runs it: a child
// process serving a ws client. One death is survived (restarted on the same folder, the chat goes
// on); a database process that cannot be kept running makes the server close its sockets and exit
// non-zero, for systemd or Docker to start it afresh, and the fresh start has every message.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "./gateway/harness.js";
import { startServerProcess } from "./example-server-process.js";
import { databaseOf, until } from "./storage/sqljs-helpers.js";

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
});

/** The texts of the user messages in the default channel. */
async function userTexts(c: Client): Promise<string[]> {
  const history = await c.request("history", { chat_id: "default", limit: 50 });
  return history.payload.messages
    .filter((m: { role: string }) => m.role === "user")
    .map((m: { text: string }) => m.text);
}

describe("example server and its database process", () => {
  it("example server - goes on after its database process is killed, and exits 1 closing sockets with 1001 once it cannot be kept running", {
    timeout: 120_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "gw-engine-"));
    const server = await startServerProcess({ GATEWAY_DATA_DIR: dataDir });
    child = server.child;
    const exited = new Promise<number | null>((r) => server.child.once("exit", (code) => r(code)));
    const c = await Client.connect(server.ws);
    await c.say({ chat_id: "default", text: "before" });

    // One death: restarted on the same folder, the chat goes on with what was said.
    const killed = [await databaseOf(server.child.pid!, [])];
    process.kill(killed[0]!, "SIGKILL");
    await until(() => server.output().includes("restart 1 of at most 3"), "the first restart", 30_000);
    await c.say({ chat_id: "default", text: "after" });
    expect(await userTexts(c)).toEqual(["before", "after"]);

    // Three more within the minute, each once the last restart answers: one too many.
    for (let round = 2; round <= 4; round++) {
      const pid = await databaseOf(server.child.pid!, killed);
      killed.push(pid);
      process.kill(pid, "SIGKILL");
      if (round < 4) {
        await until(() => server.output().includes(`restart ${round} of at most 3`), `restart ${round}`, 30_000);
        expect(await userTexts(c)).toEqual(["before", "after"]);
      }
    }
    expect(await c.closedPromise).toBe(1001);
    expect(await exited).toBe(1);
    expect(server.output()).toContain(
      "sql.js storage: the database process stopped (SIGKILL) after 3 restarts within 60 s; not starting it again; stopping the server",
    );
    expect(readdirSync(join(dataDir, "db"))).not.toContain("LOCK");

    // What the process manager does next: a fresh start on the same folder, with every message.
    const again = await startServerProcess({ GATEWAY_DATA_DIR: dataDir });
    child = again.child;
    const d = await Client.connect(again.ws);
    expect(await userTexts(d)).toEqual(["before", "after"]);
    await d.close();
    expect(await again.stop()).toBe(0);
  });
});
