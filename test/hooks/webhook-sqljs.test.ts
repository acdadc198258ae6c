// The sql.js hook writes are journaled: hooks and their claimed keys survive a restart.
import { afterEach, expect, it } from "vitest";
import { openStorage, removeTempDirs, tempDir } from "../storage/sqljs-helpers.js";

afterEach(removeTempDirs);

it("hooks and their delivery keys survive closing and reopening the data folder", async () => {
  const dir = await tempDir();
  const hook = { hook_id: "hk_1", name: "ci", chat_id: "c1", mode: "post" as const, secret: "whsec_1", created_at: 1 };
  const { storage: first } = await openStorage(dir);
  await first.putHook("alice", hook);
  expect(await first.claimHookKey("hk_1", "idem:k", Date.now() + 60_000, Date.now())).toEqual({ claimed: true });
  await first.settleHookKey("hk_1", "idem:k", "m1");
  await first.close();
  const { storage: second } = await openStorage(dir);
  expect(await second.getHook("hk_1")).toEqual({ owner: "alice", hook });
  expect(await second.claimHookKey("hk_1", "idem:k", Date.now() + 60_000, Date.now())).toEqual({
    claimed: false,
    message_id: "m1",
  });
  expect(await second.deleteHook("alice", "hk_1")).toBe(true);
  await second.close();
});
