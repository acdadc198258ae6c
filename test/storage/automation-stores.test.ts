// Webhooks and schedules are contracts of their own (HookStore, ScheduleStore), passed to
// createGateway beside the storage: what it refuses at construction, and what a gateway without
// them answers.
import { describe, expect, it } from "vitest";
import { createGateway } from "chat-gateway";
import type { HookStore, StorageImplementation } from "chat-gateway/storage";
import { addHook, createHookHandler, listHooks } from "chat-gateway/hooks";
import { memoryStorage } from "chat-gateway/storage/memory";

const runtime = { async *turn() {} };

describe("createGateway - hook and schedule stores", () => {
  it("the scheduler needs a scheduleStore; a built-in storage is one", () => {
    expect(() => createGateway({ storage: memoryStorage(), runtime, scheduler: true })).toThrow(
      new TypeError(
        "createGateway: options.scheduler needs options.scheduleStore, where each slot is claimed so that it runs once across processes (the built-in storages are one: scheduleStore: storage)",
      ),
    );
    const storage = memoryStorage();
    expect(() => createGateway({ storage, scheduleStore: storage, runtime, scheduler: true })).not.toThrow();
  });

  it("a store missing a member of its contract is refused, naming it", () => {
    const { settleHookKey: _settle, ...partial } = memoryStorage();
    expect(() =>
      createGateway({ storage: memoryStorage(), runtime, hookStore: partial as unknown as HookStore }),
    ).toThrow(new TypeError("createGateway: options.hookStore must implement HookStore; missing settleHookKey"));
    expect(() => createGateway({ storage: memoryStorage(), runtime, scheduleStore: {} as never })).toThrow(
      /options\.scheduleStore must implement ScheduleStore; missing putSchedule, listSchedules, allSchedules/,
    );
  });

  it("a storage's hook members no longer make it a hook store: without hookStore no hook is kept", async () => {
    const storage = memoryStorage();
    const gateway = createGateway({ storage, runtime });
    expect(() => createHookHandler({ gateway })).toThrow(/the gateway has no hookStore/);
    await expect(addHook(gateway, "alice", { name: "ci", channel: "builds" })).rejects.toMatchObject({
      code: "unsupported",
    });
    // Refused before anything changed: no channel was made for the hook.
    expect(await storage.listChannels("alice")).toEqual([]);
    await expect(
      gateway.schedules.add("alice", { name: "daily", cron: "0 9 * * *", channel: "reports", prompt: "report" }),
    ).rejects.toMatchObject({ code: "unsupported" });
    expect(await storage.listChannels("alice")).toEqual([]);
    expect(await gateway.schedules.list("alice")).toEqual([]);
    expect(await listHooks(gateway, "alice")).toEqual([]);
  });

  it("the storage passed as both stores keeps hooks and schedules there", async () => {
    const storage = memoryStorage();
    const gateway = createGateway({ storage, hookStore: storage, scheduleStore: storage, runtime });
    const { hook } = await addHook(gateway, "alice", { name: "ci", channel: "builds" });
    expect((await storage.getHook(hook.hook_id))?.owner).toBe("alice");
    await gateway.schedules.add("alice", { name: "daily", cron: "0 9 * * *", channel: "reports", prompt: "report" });
    expect((await storage.listSchedules("alice")).map((s) => s.name)).toEqual(["daily"]);
    // A core-only storage with the stores elsewhere: the chat data and the automation data part.
    const core = memoryStorage() as StorageImplementation;
    const elsewhere = memoryStorage();
    const split = createGateway({ storage: core, hookStore: elsewhere, runtime });
    await addHook(split, "bob", { name: "ci", channel: "builds" });
    expect((await elsewhere.listHooks("bob")).map((h) => h.name)).toEqual(["ci"]);
  });
});
