// The one `logger` option: its console default and its check at construction, shared by the
// gateway and its adapters.
import { afterEach, describe, expect, test, vi } from "vitest";
import { consoleLogger, createGateway, resolveLogger } from "chat-gateway";
import { demoRuntime } from "chat-gateway/runtime/demo";
import { memoryStorage } from "chat-gateway/storage/memory";
import { recordingLogger } from "./fixtures/recording-logger.js";

afterEach(() => vi.restoreAllMocks());

describe("logger", () => {
  test("consoleLogger prefixes warnings and errors, passes a detail along, and drops info", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const info = vi.spyOn(console, "info").mockImplementation(() => undefined);
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    const logger = consoleLogger("chat-gateway/test:");
    logger.warn("disk almost full");
    logger.error("write failed", { code: "ENOSPC" });
    logger.info("started");
    expect(warn.mock.calls).toEqual([["chat-gateway/test: disk almost full"]]);
    expect(error.mock.calls).toEqual([["chat-gateway/test: write failed", { code: "ENOSPC" }]]);
    expect(info).not.toHaveBeenCalled();
    expect(log).not.toHaveBeenCalled();
  });

  test("a given logger wins over the deprecated one-function option, which gets warnings and errors alike", () => {
    const logger = recordingLogger();
    const legacy: string[] = [];
    resolveLogger("x", "x:", logger, { name: "warn", value: (m: string) => legacy.push(m) }).warn("to the logger");
    const viaAlias = resolveLogger("x", "x:", undefined, { name: "warn", value: (m: string) => legacy.push(m) });
    viaAlias.warn("a warning");
    viaAlias.error("an error");
    viaAlias.info("dropped");
    expect(logger.lines.warn).toEqual(["to the logger"]);
    expect(legacy).toEqual(["a warning", "an error"]);
  });

  test.each([
    ["a function", () => undefined],
    ["null", null],
    ["a string", "console"],
    ["an object missing error", { info() {}, warn() {} }],
  ])("createGateway refuses a logger that is %s with a TypeError", (_, logger) => {
    const options = { storage: memoryStorage(), runtime: demoRuntime(), logger: logger as never };
    expect(() => createGateway(options)).toThrow(TypeError);
    expect(() => createGateway(options)).toThrow(
      /createGateway: logger must be an object with info, warn and error methods/,
    );
  });

  test("createGateway's default logger is the console, prefixed [chat-gateway]", () => {
    const gateway = createGateway({ storage: memoryStorage(), runtime: demoRuntime() });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    gateway.options.logger.warn("hello");
    expect(warn.mock.calls).toEqual([["[chat-gateway] hello"]]);
  });
});
