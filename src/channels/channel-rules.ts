/**
 * The field rules of channels (docs/PROTOCOL.md §3) and their sort order.
 * @module
 */
import { GatewayError } from "../protocol/errors.js";
import { LIMITS } from "../protocol/limits.js";
import type { Channel } from "../contracts/records.js";
import type { ServerPayloads } from "../protocol/server-frames.js";

const COLOR = /^#[0-9a-fA-F]{6}$/;
const PNG = [0x89, 0x50, 0x4e, 0x47];
const JPEG = [0xff, 0xd8, 0xff];

/** A trimmed name of 1 to 100 characters, or `unsupported`. */
export function checkName(name: string): string {
  const trimmed = name.trim();
  const length = [...trimmed].length;
  if (length < 1 || length > LIMITS.channelNameMax) {
    throw new GatewayError("unsupported", `field "name": use 1 to ${LIMITS.channelNameMax} characters`);
  }
  return trimmed;
}

/** `#RRGGBB` or null, else `unsupported`. */
export function checkColor(color: string | null | undefined): string | null | undefined {
  if (color === undefined || color === null) return color;
  if (!COLOR.test(color)) throw new GatewayError("unsupported", `field "color": use the format #RRGGBB`);
  return color;
}

/** Base64 PNG or JPEG of at most 256 KiB decoded, or null; else `unsupported`. */
export function checkIcon(icon: string | null | undefined): string | null | undefined {
  if (icon === undefined || icon === null) return icon;
  // Base64 of 256 KiB is about 350,000 characters: refuse larger text before decoding it.
  if (icon.length > Math.ceil((LIMITS.iconMaxBytes * 4) / 3) + 4 || !/^[A-Za-z0-9+/]*={0,2}$/.test(icon)) {
    throw new GatewayError("unsupported", `field "icon": use base64 PNG or JPEG of at most 256 KiB`);
  }
  const bytes = Buffer.from(icon, "base64");
  const starts = (magic: number[]) => magic.every((b, i) => bytes[i] === b);
  if (bytes.length > LIMITS.iconMaxBytes || !(starts(PNG) || starts(JPEG))) {
    throw new GatewayError("unsupported", `field "icon": use base64 PNG or JPEG of at most 256 KiB`);
  }
  return icon;
}

/**
 * An auto-thread's derived title: the first line, cut at a word boundary, at most 60 characters.
 */
export function deriveTitle(text: string, max = 60): string {
  const firstLine = text.trim().split(/\r?\n/, 1)[0]?.trim() ?? "";
  const chars = [...firstLine];
  if (chars.length <= max) return firstLine;
  const cut = chars.slice(0, max - 1).join("");
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 3 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/**
 * A channel as the wire carries it: the record without storage-only fields. `auto` is never part
 * of it (a record stored by an older version may hold it): only the `channel.created` of a minted
 * thread says `auto: true` ({@link createdPayload}).
 */
export function channelPayload(channel: Channel): ServerPayloads["channel.created"] {
  const { created_ts: _created, auto: _auto, model: _model, ...wire } = channel;
  return wire;
}

/** The payload of `channel.created`: the channel, plus `auto: true` when the gateway minted it. */
export function createdPayload(channel: Channel, auto = false): ServerPayloads["channel.created"] {
  return auto ? { ...channelPayload(channel), auto: true } : channelPayload(channel);
}
