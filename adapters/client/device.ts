/**
 * What a device keeps between page loads when the options name nothing: in a browser, its id, its
 * sync cursor and its open asks in `localStorage` (the cursor and asks under keys of the gateway's
 * URL and the device id, so two gateways or devices in one browser do not mix); elsewhere a random
 * id and memory.
 * @module
 */
import { hasLocalStorage, localStorageCursorStore, memoryCursorStore, type CursorStore } from "./cursor.js";
import { randomId } from "./media.js";
import { localStorageOpenAsksStore, memoryOpenAsksStore, type OpenAsksStore } from "./open-asks.js";

/** The device id kept in `localStorage`, made on first use; a random one where there is none. */
export function defaultDeviceId(): string {
  if (hasLocalStorage()) {
    const key = "chat-gateway:device-id";
    try {
      const existing = window.localStorage.getItem(key);
      if (existing) return existing;
      const id = randomId("web-");
      window.localStorage.setItem(key, id);
      return id;
    } catch {
      // Storage refused (private mode): a random id for this page.
    }
  }
  return randomId("dev-");
}

/** Where the device's cursor is kept when `cursorStore` is not given. */
export function defaultCursorStore(url: string, deviceId: string): CursorStore {
  return hasLocalStorage() ? localStorageCursorStore(`chat-gateway:cursor:${url}:${deviceId}`) : memoryCursorStore();
}

/** Where the device's open asks are kept when `openAsksStore` is not given. */
export function defaultOpenAsksStore(url: string, deviceId: string): OpenAsksStore {
  return hasLocalStorage() ? localStorageOpenAsksStore(`chat-gateway:asks:${url}:${deviceId}`) : memoryOpenAsksStore();
}
