import { describe, expect, it } from "vitest";
import { memorySessionStore } from "chat-gateway/login";
import { describeSessionStoreConformance } from "chat-gateway/testing";

describeSessionStoreConformance("memory", () => memorySessionStore());

describe("memory session store", () => {
  it("an expired token is deleted on lookup; expired sessions are purged when one is created", async () => {
    const store = memorySessionStore();
    await store.create({ token: "a", username: "alice", expires_at: 100 }, 0);
    await store.create({ token: "b", username: "bob", expires_at: 200 }, 0);
    expect(await store.get("a", 99)).toEqual({ token: "a", username: "alice", expires_at: 100 });
    expect(await store.get("a", 100)).toBeUndefined();
    expect(await store.get("a", 0)).toBeUndefined(); // gone, not merely hidden
    await store.create({ token: "c", username: "carol", expires_at: 500 }, 200);
    expect(await store.get("b", 0)).toBeUndefined();
    expect(await store.get("c", 0)).toMatchObject({ username: "carol" });
    await store.deleteUser("carol");
    expect(await store.get("c", 0)).toBeUndefined();
  });
});
