import type { IncomingMessage, ServerResponse } from "node:http";
import { describe, expectTypeOf, it } from "vitest";
import type { Authenticator, SessionStore, UpgradeDecision } from "chat-gateway";
import {
  createLoginProtection,
  memorySessionStore,
  type UserStoreError,
  type LoginProtection,
  type LoginProtectionOptions,
} from "chat-gateway/login";
import { runUserCli, type UserCliIO } from "chat-gateway/cli";

describe("public types of chat-gateway/login and chat-gateway/cli", () => {
  it("createLoginProtection takes options and returns the protection", () => {
    expectTypeOf(createLoginProtection).parameter(0).toEqualTypeOf<LoginProtectionOptions>();
    expectTypeOf(createLoginProtection).returns.toEqualTypeOf<LoginProtection>();
    expectTypeOf<LoginProtectionOptions["usersFile"]>().toEqualTypeOf<string>();
    expectTypeOf<LoginProtectionOptions["sessions"]>().toEqualTypeOf<SessionStore | undefined>();
    expectTypeOf<LoginProtectionOptions["clock"]>().toEqualTypeOf<(() => number) | undefined>();
  });

  it("the protection's methods", () => {
    expectTypeOf<LoginProtection["handle"]>().toEqualTypeOf<
      (req: IncomingMessage, res: ServerResponse) => Promise<boolean>
    >();
    expectTypeOf<LoginProtection["authorizeUpgrade"]>().toEqualTypeOf<
      (req: IncomingMessage) => Promise<UpgradeDecision>
    >();
    expectTypeOf<LoginProtection["authenticator"]>().returns.toEqualTypeOf<Authenticator>();
    expectTypeOf<LoginProtection["userOf"]>().returns.toEqualTypeOf<string | null>();
    expectTypeOf<LoginProtection["close"]>().returns.toEqualTypeOf<Promise<void>>();
  });

  it("runUserCli resolves an exit code; the memory store is a SessionStore; value errors are Errors", () => {
    expectTypeOf(runUserCli).parameters.toEqualTypeOf<[readonly string[], UserCliIO]>();
    expectTypeOf(runUserCli).returns.toEqualTypeOf<Promise<number>>();
    expectTypeOf(memorySessionStore).returns.toEqualTypeOf<SessionStore>();
    expectTypeOf<UserStoreError>().toMatchTypeOf<Error>();
  });
});
