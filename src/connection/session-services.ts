/**
 * What a device connection reads and writes through, as `createGateway()` wires it.
 * @module
 */
import type { EventEmitter } from "eventemitter3";
import type { Bus } from "../contracts/bus.js";
import type { MediaServices } from "../media/media-transfer.js";
import type { GatewayEvents } from "../options/gateway-events.js";
import type { ResolvedOptions } from "../options/options.js";
import type { Subscriber } from "../outbox/fan-out.js";
import type { Owner } from "../protocol/ids.js";
import type { RequestServices } from "../requests/dispatch.js";
import type { Admission } from "../admission/admission.js";
import type { HandshakeServices } from "./handshake.js";
import type { IntakeServices } from "./intake.js";
import type { TrafficCounts } from "./traffic.js";

/** What a connection reads and writes through: its intake's, its handshake's, its requests' and its own. */
export interface SessionServices extends IntakeServices, HandshakeServices, RequestServices, MediaServices {
  readonly options: ResolvedOptions;
  readonly events: EventEmitter<GatewayEvents>;
  readonly bus: Pick<Bus, "ready" | "publish" | "subscribe">;
  /** Frames and hellos counted for {@link Gateway.stats} (docs/PROTOCOL.md §18.3). */
  readonly traffic: TrafficCounts;
  /** Whether and when a connection may start: the caps per address and on hellos in progress (docs/PROTOCOL.md §18.5). */
  readonly admission: Admission;
  /** Start and stop receiving the owner's frames. */
  attach(owner: Owner, subscriber: Subscriber): void;
  detach(owner: Owner, subscriber: Subscriber): void;
}
