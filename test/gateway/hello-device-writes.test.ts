// A hello stores the device record (docs/PROTOCOL.md §2.1), but one that changes nothing but
// `last_seen`, within an hour of the stored one, is not written again: a reconnecting fleet costs
// no write per hello. Through real sockets, against a memory storage whose writes are counted.
import { afterEach, describe, expect, it } from "vitest";
import { ANONYMOUS_OWNER, type Device } from "chat-gateway";
import type { Storage } from "chat-gateway/storage";
import { memoryStorage } from "chat-gateway/storage/memory";
import { Client, startGateway, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A memory storage that keeps every device record written, in order. */
function countingStorage(): { storage: Storage; written: Device[] } {
  const storage = memoryStorage();
  const written: Device[] = [];
  const putDevice = storage.putDevice.bind(storage);
  storage.putDevice = (owner, device) => {
    written.push(structuredClone(device));
    return putDevice(owner, device);
  };
  return { storage, written };
}

async function helloAndLeave(url: string, hello: Record<string, unknown>): Promise<void> {
  const client = await Client.connect(url, hello);
  client.close();
}

describe("hello device writes", () => {
  it("hello - the same device again within an hour writes nothing; a change, or an hour later, writes the record", async () => {
    const { storage, written } = countingStorage();
    let now = 1_000_000;
    h = await startGateway({ storage, now: () => now });
    const phone = { device_id: "phone", device_name: "Phone" };

    await helloAndLeave(h.url, phone);
    expect(written.map((d) => d.last_seen)).toEqual([1_000_000]);
    now += 59 * 60_000;
    await helloAndLeave(h.url, phone);
    expect(written).toHaveLength(1);

    // Any other field changed is written at once, with the new last_seen.
    now += 1_000;
    await helloAndLeave(h.url, { ...phone, device_name: "My phone" });
    expect(written.map((d) => [d.device_name, d.last_seen])).toEqual([
      ["Phone", 1_000_000],
      ["My phone", now],
    ]);
    await helloAndLeave(h.url, { ...phone, device_name: "My phone", caps: { pickers: true } });
    expect(written.at(-1)?.caps.pickers).toBe(true);

    // An hour after the stored last_seen the same record is written again.
    const stored = now;
    now = stored + 60 * 60_000;
    await helloAndLeave(h.url, { ...phone, device_name: "My phone", caps: { pickers: true } });
    expect(written).toHaveLength(4);
    expect((await storage.getDevice(ANONYMOUS_OWNER, "phone"))?.last_seen).toBe(stored + 60 * 60_000);
  });
});
