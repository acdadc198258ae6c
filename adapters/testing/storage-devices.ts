// Device records: stored, replaced and listed per owner (their concurrency: storage-concurrency.ts).
import { describe, expect, test } from "vitest";
import type { Storage } from "chat-gateway/storage";
import { A, device } from "./storage-records.js";

/** Devices are stored, replaced and listed per owner. */
export function describeDevices(use: () => Storage): void {
  describe("devices", () => {
    test("devices - stored, replaced and listed per owner", async () => {
      await use().putDevice(A, device("d1"));
      await use().putDevice(
        A,
        device("d2", {
          fcm_token: "f",
          ntfy_topic: "n",
          caps: { min_protocol: 1, media: false, push: "fcm", streaming: false },
        }),
      );
      await use().putDevice(A, device("d1", { device_name: "renamed", last_seen: 5 }));
      expect(await use().getDevice(A, "d1")).toEqual(device("d1", { device_name: "renamed", last_seen: 5 }));
      expect(await use().getDevice(A, "d2")).toEqual(
        device("d2", {
          fcm_token: "f",
          ntfy_topic: "n",
          caps: { min_protocol: 1, media: false, push: "fcm", streaming: false },
        }),
      );
      expect(await use().getDevice(A, "d3")).toBeUndefined();
      expect((await use().listDevices(A)).map((d) => d.device_id).sort()).toEqual(["d1", "d2"]);
    });

    test("devices - a Web Push subscription is kept whole, and a record without it drops it", async () => {
      const webpush = {
        endpoint: "https://push.example.com/send/abc?x=1",
        keys: { p256dh: `B${"A".repeat(86)}`, auth: "A".repeat(22) },
      };
      const subscribed = device("w1", {
        webpush,
        caps: { min_protocol: 1, media: true, push: "webpush", streaming: true },
      });
      await use().putDevice(A, subscribed);
      expect(await use().getDevice(A, "w1")).toEqual(subscribed);
      const { webpush: _dropped, ...without } = subscribed;
      await use().putDevice(A, without);
      expect(await use().getDevice(A, "w1")).toEqual(without);
      expect((await use().listDevices(A)).find((d) => d.device_id === "w1")).not.toHaveProperty("webpush");
    });
  });
}
