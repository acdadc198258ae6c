/**
 * What an answer (`runAnswer`) reads and writes through: storage, the outbox, push, the gateway's
 * events and the options that shape a turn.
 * @module
 */
import type { EventEmitter } from "eventemitter3";
import type { Storage } from "../contracts/storage.js";
import type { GatewayEvents } from "../options/gateway-events.js";
import type { Logger } from "../contracts/logger.js";
import type { ResolvedOptions } from "../options/options.js";
import type { PushIfAway } from "../push/away-push.js";
import type { RetractPush } from "../push/retraction.js";
import type { PublishLive, StoreChange } from "../outbox/outbox.js";

/** The options an answer reads. */
export type TurnOptions = Pick<
  ResolvedOptions,
  | "streaming"
  | "checkpointIntervalMs"
  | "mediaStore"
  | "runtimeInfo"
  | "turnTimeoutMs"
  | "updateIntervalMs"
  | "maxAnswerChars"
  | "maxTurnMs"
  | "clock"
>;

/** What an answer reads and writes through. */
export interface TurnServices {
  readonly storage: Storage;
  readonly store: StoreChange;
  readonly live: PublishLive;
  readonly pushIfAway: PushIfAway;
  /** Clears an ask's push on the targets that did not answer it (docs/PROTOCOL.md §21). */
  readonly retractPush: RetractPush;
  readonly events: EventEmitter<GatewayEvents>;
  readonly log: Logger;
  readonly options: TurnOptions;
  now(): number;
}
