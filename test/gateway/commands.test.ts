import { describe, expect, it } from "vitest";
import type { RuntimeEvent } from "chat-gateway";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { Client, gatewayPerTest } from "./harness.js";
import { gate, scriptedRuntime } from "./runtimes.js";

const startGateway = gatewayPerTest();

describe("commands", () => {
  it("commands - the catalog lists built-ins, the runtime's commands and plugin commands with the five fields", async () => {
    const h = await startGateway({
      runtime: {
        ...demoRuntime({ delayMs: 0 }),
        commands: () => [
          {
            name: "/model",
            description: "Switch model",
            args_hint: "<name>",
            category: "Configuration",
            aliases: ["/m"],
          },
        ],
      },
    });
    h.gateway.commands.register(
      { name: "/Weather", description: "Weather now", aliases: ["/w"] },
      ({ args }) => `Sunny in ${args || "Lisbon"}`,
    );
    const c = await Client.connect(h.url);
    const catalog = (await c.request("commands.catalog", {})).payload.commands;
    const names = catalog.map((x: any) => x.name);
    // The runtime's /model takes the name from the built-in that answers model pickers.
    expect(names).toEqual(["/help", "/stop", "/new", "/approve", "/deny", "/answer", "/model", "/weather"]);
    for (const entry of catalog)
      expect(Object.keys(entry).sort()).toEqual(["aliases", "args_hint", "category", "description", "name"]);
    expect(catalog.find((x: any) => x.name === "/weather")).toEqual({
      name: "/weather",
      description: "Weather now",
      args_hint: "",
      category: "Plugin",
      aliases: ["/w"],
    });
    const viaAlias = await c.say({ chat_id: "default", text: "/W Porto" });
    expect(viaAlias.final.payload.final_text).toBe("Sunny in Porto");
    const help = await c.say({ chat_id: "default", text: "/help" });
    expect(help.final.payload.final_text).toContain("/weather");
    const unknown = await c.say({ chat_id: "default", text: "/frobnicate now" });
    expect(unknown.final.payload.final_text).toMatch(/Unknown command \/frobnicate/);
    const model = await c.say({ chat_id: "default", text: "/m big" });
    expect(model.final.payload.final_text).toMatch(/no command handler/);
  });

  it("commands - a runtime or plugin command is never hidden by a built-in: it runs, and the built-in keeps its free names", async () => {
    const warnings: string[] = [];
    const runtime = {
      ...demoRuntime({ delayMs: 0 }),
      commands: () => [
        { name: "/help", description: "The agent's own help", args_hint: "", category: "Info" as const, aliases: [] },
        {
          name: "/reset",
          description: "Reset the agent's memory",
          args_hint: "",
          category: "Session" as const,
          aliases: [],
        },
        { name: "/broken", description: "Bad category", args_hint: "", category: "Misc" as any, aliases: [] },
      ],
      async *command(input: { command: string }) {
        yield { type: "text", delta: `runtime ran ${input.command}` } as RuntimeEvent;
      },
    };
    const h = await startGateway({
      runtime,
      logger: { info() {}, error() {}, warn: (message: string) => warnings.push(message) },
    });
    h.gateway.commands.register({ name: "/new", description: "A plugin's fresh start" }, () => "plugin ran /new");
    const c = await Client.connect(h.url);
    const catalog = (await c.request("commands.catalog", {})).payload.commands;
    expect(catalog.map((x: any) => [x.name, x.aliases])).toEqual([
      ["/commands", []],
      ["/stop", ["/cancel"]],
      ["/approve", []],
      ["/deny", []],
      ["/answer", []],
      ["/model", []],
      ["/help", []],
      ["/reset", []],
      ["/new", []],
    ]);
    expect(catalog.find((x: any) => x.name === "/help").description).toBe("The agent's own help");
    expect(warnings.join("\n")).toMatch(/\/broken: category must be one of/);
    expect((await c.say({ chat_id: "default", text: "/help" })).final.payload.final_text).toBe("runtime ran /help");
    expect((await c.say({ chat_id: "default", text: "/reset" })).final.payload.final_text).toBe("runtime ran /reset");
    expect((await c.say({ chat_id: "default", text: "/new" })).final.payload.final_text).toBe("plugin ran /new");
    expect((await c.say({ chat_id: "default", text: "/commands" })).final.payload.final_text).toMatch(
      /^Commands:\n\/commands — List the available commands\n/,
    );
    expect((await c.say({ chat_id: "default", text: "/broken" })).final.payload.final_text).toMatch(
      /Unknown command \/broken/,
    );
  });

  it("commands - a plugin entry that is not a valid catalog entry throws TypeError at registration", async () => {
    const h = await startGateway();
    const commands = h.gateway.commands;
    const run = () => "x";
    expect(() => commands.register({ name: "weather", description: "no slash" }, run)).toThrow(TypeError);
    expect(() => commands.register({ name: "weather", description: "no slash" }, run)).toThrow(/leading slash/);
    expect(() => commands.register({ name: "/two words", description: "space" }, run)).toThrow(TypeError);
    expect(() => commands.register({ name: "/", description: "bare slash" }, run)).toThrow(TypeError);
    expect(() => commands.register({ name: "/ok", description: "bad alias", aliases: ["w"] }, run)).toThrow(/alias/);
    expect(() => commands.register({ name: "/ok", description: "bad category", category: "Fun" as any }, run)).toThrow(
      /category must be one of Session, Configuration, Tools & Skills, Info, Exit, Plugin/,
    );
    expect(() => commands.register({ name: "/ok", description: 5 as any }, run)).toThrow(/description/);
    expect(() => commands.register({ name: "/ok", description: "no handler" }, undefined as any)).toThrow(TypeError);
    expect((await commands.catalog()).map((x) => x.name)).toEqual([
      "/help",
      "/stop",
      "/new",
      "/approve",
      "/deny",
      "/answer",
      "/model",
    ]);
    commands.register({ name: "/ok", description: "fine", category: "Tools & Skills" }, run);
    expect((await commands.catalog()).at(-1)).toEqual({
      name: "/ok",
      description: "fine",
      args_hint: "",
      category: "Tools & Skills",
      aliases: [],
    });
  });

  it("commands - slash commands and their replies stay out of the agent's history; /new starts a fresh context", async () => {
    const runtime = scriptedRuntime(async function* (input) {
      yield { type: "text", delta: `re:${input.message.text}` } as RuntimeEvent;
    });
    const h = await startGateway({ runtime });
    const c = await Client.connect(h.url);
    await c.say({ chat_id: "default", text: "one" });
    await c.say({ chat_id: "default", text: "/help" });
    await c.say({ chat_id: "default", text: "two" });
    expect(runtime.inputs[1].history.map((m) => m.text)).toEqual(["one", "re:one"]);
    await c.say({ chat_id: "default", text: "/new" });
    await c.say({ chat_id: "default", text: "three" });
    expect(runtime.inputs[2].history).toEqual([]);
  });

  it("commands - /stop with nothing running says so; /stop does not wait behind the running turn", async () => {
    const g = gate();
    const h = await startGateway({
      runtime: scriptedRuntime(async function* (input) {
        if (input.message.text === "slow")
          await Promise.race([g.wait, new Promise((r) => input.signal.addEventListener("abort", r))]);
        yield { type: "text", delta: "x" } as RuntimeEvent;
      }),
    });
    const c = await Client.connect(h.url);
    const idle = await c.say({ chat_id: "default", text: "/stop" });
    expect(idle.final.payload.final_text).toBe("Nothing is running here.");
    await c.request("message.send", { chat_id: "default", text: "slow" });
    await c.waitFor((f) => f.type === "message.start" && c.of("message.start").length === 2);
    await c.request("message.send", { chat_id: "default", text: "/cancel" });
    const stopped = await c.waitFor((f) => f.type === "message.stop" && f.payload.status === "stopped");
    expect(stopped.payload.final_text).toBe("(stopped)");
    g.release();
  });
});
