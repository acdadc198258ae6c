/**
 * A door device for an embedder's own door (docs/PROTOCOL.md §19.1): the request's bearer said as
 * a device's hello, under the same checks as every door of `chat-gateway/doors`.
 * @module
 */
import type { IncomingMessage } from "node:http";
import type { Gateway, Owner } from "chat-gateway";
import { doorContext, type DoorOptions } from "./door-context.js";
import type { DoorDevice, DoorFrame } from "./door-device.js";
import { openDoorSession } from "./door-session.js";
import { openAsks } from "./asks.js";

/** A door device and whom it acts for. */
export interface OpenedDoorDevice {
  device: DoorDevice;
  owner: Owner;
  /** The owner's open asks, oldest first: each its picker frame's payload with `kind` the frame type. */
  openAsks(): Promise<Array<Record<string, unknown>>>;
}

/** Options of {@link openDoorDevice}: the door options and the device's name. */
export interface OpenDoorDeviceOptions extends DoorOptions {
  /** The device's name, and the prefix of its id (derived from the bearer). */
  name: string;
  /** Called with every frame of the device, from its hello on. */
  onFrame?: (frame: DoorFrame) => void;
}

/**
 * Says the request's hello as a device of its bearer's owner, as every door does: the options'
 * `authorize` first, then the bearer (never a cookie) judged by the gateway's authenticator.
 * Close the device when the request is done.
 * @throws a `DoorError` (answer it with {@link sendDoorError}) for a refused request
 */
export async function openDoorDevice(
  gateway: Gateway,
  req: IncomingMessage,
  options: OpenDoorDeviceOptions,
): Promise<OpenedDoorDevice> {
  const ctx = doorContext(gateway, options);
  const { device, owner } = await openDoorSession(ctx, req, options.name, options.onFrame);
  return { device, owner, openAsks: () => openAsks(ctx.storage, owner, Date.now()) };
}
