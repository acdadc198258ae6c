// The public types a user writes against, checked by the compiler through vitest.
import { describe, expectTypeOf, it } from "vitest";
import type {
  AgentRuntime,
  Authenticator,
  Channel,
  Gateway,
  HistoryItem,
  Logger,
  RuntimeEvent,
  TurnInput,
} from "chat-gateway";
import type { Storage, StorageCapabilities, StorageImplementation } from "chat-gateway/storage";
import type { ClientPayloads, GatewayError } from "chat-gateway/protocol";
import { consoleLogger, createGateway } from "chat-gateway";
import { GatewayError as GatewayErrorClass } from "chat-gateway/protocol";
import { defineStorage } from "chat-gateway/storage";
import type { LoginProtectionOptions } from "chat-gateway/login";
import type { RedisBusOptions } from "chat-gateway/bus/redis";
import type { RedisLaneLockOptions } from "chat-gateway/redis";
import type { SqlJsStorageOptions } from "chat-gateway/storage/sqljs";

describe("public types", () => {
  it("types - createGateway takes storage and runtime and returns a Gateway", () => {
    expectTypeOf(createGateway).parameter(0).toHaveProperty("storage").toEqualTypeOf<StorageImplementation>();
    expectTypeOf(createGateway).parameter(0).toHaveProperty("runtime").toEqualTypeOf<AgentRuntime>();
    expectTypeOf(createGateway).returns.toEqualTypeOf<Gateway>();
    expectTypeOf<Gateway["post"]>().returns.resolves.toMatchTypeOf<HistoryItem>();
  });

  it("types - a runtime is an async iterable of events and receives the abort signal", () => {
    expectTypeOf<ReturnType<AgentRuntime["turn"]>>().toEqualTypeOf<AsyncIterable<RuntimeEvent>>();
    expectTypeOf<TurnInput["signal"]>().toEqualTypeOf<AbortSignal>();
    expectTypeOf<Extract<RuntimeEvent, { type: "tool-start" }>>()
      .toHaveProperty("args")
      .toEqualTypeOf<Record<string, unknown>>();
  });

  it("types - client payloads are derived from the frame structs", () => {
    expectTypeOf<ClientPayloads["message.send"]["text"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ClientPayloads["history"]["limit"]>().toEqualTypeOf<number | undefined>();
    expectTypeOf<ClientPayloads["search"]["scope"]>().toEqualTypeOf<"all" | "chat">();
  });

  it("types - records and errors", () => {
    expectTypeOf<Channel["kind"]>().toEqualTypeOf<"default" | "channel" | "thread">();
    expectTypeOf<GatewayError["code"]>().toEqualTypeOf<
      "auth" | "not_found" | "rate_limited" | "media_too_large" | "unsupported" | "internal"
    >();
    expectTypeOf(GatewayErrorClass).constructorParameters.toEqualTypeOf<
      [code: GatewayError["code"], message: string, options?: { cause?: unknown }]
    >();
    expectTypeOf<Authenticator["authenticate"]>().returns.resolves.toEqualTypeOf<{
      owner: string;
      user: string | null;
      sessions?: readonly string[];
      expiresAt?: number;
    } | null>();
  });

  it("types - the gateway and its adapters take one Logger as logger", () => {
    expectTypeOf(createGateway).parameter(0).toHaveProperty("logger").toEqualTypeOf<Logger | undefined>();
    expectTypeOf<LoginProtectionOptions["logger"]>().toEqualTypeOf<Logger | undefined>();
    expectTypeOf<SqlJsStorageOptions["logger"]>().toEqualTypeOf<Logger | undefined>();
    expectTypeOf<RedisBusOptions["logger"]>().toEqualTypeOf<Logger | undefined>();
    expectTypeOf<RedisLaneLockOptions["logger"]>().toEqualTypeOf<Logger | undefined>();
    expectTypeOf(consoleLogger).returns.toEqualTypeOf<Logger>();
  });

  it("types - a storage implementation needs only the core; defineStorage gives every member and the capabilities", () => {
    expectTypeOf<Pick<StorageImplementation, "search" | "pruneOutbox" | "getMedia">>().toEqualTypeOf<
      Partial<Pick<Storage, "search" | "pruneOutbox" | "getMedia">>
    >();
    expectTypeOf<StorageImplementation["commit"]>().toEqualTypeOf<Storage["commit"]>();
    expectTypeOf(defineStorage).returns.toEqualTypeOf<Storage>();
    expectTypeOf<Storage["capabilities"]>().toEqualTypeOf<Readonly<StorageCapabilities>>();
    expectTypeOf<Storage>().toMatchTypeOf<StorageImplementation>();
  });
});
