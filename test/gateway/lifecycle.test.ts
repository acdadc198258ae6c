import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, createGateway, type RuntimeEvent } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { GatewayError } from "chat-gateway/protocol";
import { memoryStorage } from "chat-gateway/storage/memory";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { Client, startGateway, type Harness } from "./harness.js";
import { gate, scriptedRuntime, sleep } from "./runtimes.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A runtime whose turns wait until released or aborted, so a lane stays busy while a test acts. */
function busyRuntime() {
  const held = gate();
  const runtime = scriptedRuntime(async function* (input) {
    await Promise.race([held.wait, new Promise((resolve) => input.signal.addEventListener("abort", resolve))]);
    yield { type: "text", delta: `done: ${input.message.text}` } as RuntimeEvent;
  });
  return { runtime, release: held.release };
}

/** The rejection of a promise that must settle within `ms`. */
async function rejectionOf(promise: Promise<unknown>, ms = 3000): Promise<unknown> {
  const outcome = await Promise.race([
    promise.then(
      () => ({ settled: "resolved" as const }),
      (error: unknown) => ({ settled: "rejected" as const, error }),
    ),
    sleep(ms).then(() => ({ settled: "pending" as const })),
  ]);
  expect(outcome.settled).toBe("rejected");
  return (outcome as { error: unknown }).error;
}

describe("lifecycle - gateway.post settles", () => {
  it("post - a post waiting behind a turn rejects with not_found when its channel is deleted", async () => {
    const busy = busyRuntime();
    h = await startGateway({ runtime: busy.runtime });
    const c = await Client.connect(h.url);
    const work = (await c.request("channel.create", { name: "Work", kind: "channel" })).payload.chat_id;
    await c.request("message.send", { chat_id: work, text: "long job" });
    await c.waitFor((f) => f.type === "message.start" && f.payload.chat_id === work);
    const posted = h.gateway.post(ANONYMOUS_OWNER, work, { text: "report" });
    await sleep(50);
    expect((await c.request("channel.delete", { chat_id: work })).type).toBe("channel.deleted");
    const error = await rejectionOf(posted);
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe("not_found");
    // Nothing of the dropped post reached a device.
    expect(c.frames.some((f) => f.type === "message.stop" && f.payload.final_text === "report")).toBe(false);
    await h.gateway.close();
  });

  it("post - a post streaming when its channel is deleted rejects with not_found", async () => {
    h = await startGateway();
    const c = await Client.connect(h.url);
    const work = (await c.request("channel.create", { name: "Work", kind: "channel" })).payload.chat_id;
    const never = gate();
    const posted = h.gateway.post(ANONYMOUS_OWNER, work, {
      events: (async function* () {
        yield { type: "text", delta: "half" } as RuntimeEvent;
        await never.wait;
      })(),
    });
    await c.waitFor((f) => f.type === "message.start" && f.payload.chat_id === work);
    await c.request("channel.delete", { chat_id: work });
    const error = await rejectionOf(posted);
    expect((error as GatewayError).code).toBe("not_found");
  });

  it("post - close() rejects a waiting post with a GatewayError and resolves itself", async () => {
    const busy = busyRuntime();
    h = await startGateway({ runtime: busy.runtime });
    const c = await Client.connect(h.url);
    await c.request("message.send", { chat_id: "default", text: "long job" });
    await c.waitFor((f) => f.type === "message.start");
    const posted = h.gateway.post(ANONYMOUS_OWNER, "default", { text: "report" });
    posted.catch(() => undefined);
    await sleep(50);
    const closing = h.gateway.close();
    const error = await rejectionOf(posted);
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe("unsupported");
    expect((error as Error).message).toMatch(/shut down/);
    // close() resolves: one that hung would fail the test at its timeout, with no window of time here.
    await closing;
    // After close, a post is refused at once.
    expect(
      ((await rejectionOf(h.gateway.post(ANONYMOUS_OWNER, "default", { text: "late" }))) as GatewayError).code,
    ).toBe("unsupported");
  });

  it("post - an answer that throws rejects the post with that error, and close() still resolves", async () => {
    h = await startGateway();
    const broken = new Error("a turn:start listener broke");
    h.gateway.on("turn:start", () => {
      throw broken;
    });
    expect(await rejectionOf(h.gateway.post(ANONYMOUS_OWNER, "default", { text: "hello" }))).toBe(broken);
    await h.gateway.close();
  });

  it("post - refused with unsupported before start()", async () => {
    const gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime({ delayMs: 0 }) });
    const error = await rejectionOf(gateway.post(ANONYMOUS_OWNER, "default", { text: "too early" }));
    expect((error as GatewayError).code).toBe("unsupported");
  });
});

describe("lifecycle - start and close", () => {
  it("start - a start() whose storage open rejects can be retried, and the gateway then works", async () => {
    const base = memoryStorage();
    let opens = 0;
    const storage: Storage = {
      ...base,
      async open() {
        opens++;
        if (opens === 1) throw new Error("database not up yet");
        await base.open?.();
      },
    };
    const gateway = createGateway({ storage, runtime: demoRuntime({ delayMs: 0 }) });
    await expect(gateway.start()).rejects.toThrow("database not up yet");
    await gateway.start();
    expect(opens).toBe(2);
    const posted = await gateway.post(ANONYMOUS_OWNER, "default", { text: "works" });
    expect(posted).toMatchObject({ text: "works", status: "complete" });
    await expect(gateway.start()).rejects.toThrow(/already/);
    await gateway.close();
  });

  it("close - a process that creates, starts and closes a gateway exits on its own at once", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(root, "test/fixtures/gateway-close.ts")], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on("exit", (exitCode) => resolve(exitCode)));
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const [closed, holding] = stdout.trim().split("\n");
    expect(closed).toBe("closed");
    // close() used to leave a 5 s timer behind that held the process: once close() resolved,
    // nothing but the child's own stdout may hold its event loop, so it exits at once.
    const held = JSON.parse(holding.replace(/^holding /, "")) as string[];
    expect(held.filter((kind) => kind !== "PipeWrap")).toEqual([]);
  }, 30_000);

  it("close - a turn whose runtime hangs holds the process until its timeout ends it, however little else is running", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(root, "test/fixtures/hanging-turn.ts")], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on("exit", (exitCode) => resolve(exitCode)));
    // With the turn's timers let go, the process left mid-turn (exit 13, a top-level await unsettled).
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(
      stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split(" ")[0]),
    ).toEqual(["ended", "closed"]);
    expect(stdout).toContain('"status":"error"');
  }, 30_000);
});
