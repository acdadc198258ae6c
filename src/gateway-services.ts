/**
 * Assembling one gateway for `createGateway()`: the one place where its parts meet, so that
 * gateway.ts keeps only the lifecycle and the server-side calls.
 * @module
 */
import type { EventEmitter } from "eventemitter3";
import { openAuthenticator } from "./contracts/authenticator.js";
import type { Bus } from "./contracts/bus.js";
import type { CommandRegistry } from "./turn/commands.js";
import type { SessionServices } from "./connection/session-services.js";
import { TrafficCounts } from "./connection/traffic.js";
import type { GatewayEvents } from "./options/gateway-events.js";
import { ConnectionCount } from "./admission/connection-count.js";
import { Admission } from "./admission/admission.js";
import { sharedBudgets } from "./connection/shared-budgets.js";
import { awayPush, type AwayPush } from "./push/away-push.js";
import { PublicUrls } from "./push/public-url.js";
import { pushRetraction, SentPushes } from "./push/retraction.js";
import { readRetraction } from "./push/read-retraction.js";
import { FanOut } from "./outbox/fan-out.js";
import { Outbox } from "./outbox/outbox.js";
import { ChannelDirectory } from "./channels/channel-directory.js";
import { LaneScheduler, laneTaker } from "./lanes/scheduler.js";
import type { GatewayOptions, ResolvedOptions } from "./options/options.js";
import { listenForTurns } from "./lanes/relay.js";
import { localTurnFrames } from "./lanes/shared-state.js";
import { OpenAsks } from "./asks/open-asks.js";
import { arbitrateRelayed } from "./asks/ask-answers.js";
import { listenForRelays } from "./asks/ask-relay.js";

/**
 * The parts of one gateway, each a concept of its own (the outbox, the fan-out to this process's
 * connections, push, the channel directory, the lanes), with what each consumer reads of them.
 */
export function wireServices(
  options: ResolvedOptions,
  given: GatewayOptions,
  bus: Bus,
  commands: CommandRegistry,
  events: EventEmitter<GatewayEvents>,
): { services: SessionServices; outbox: Outbox; sendOverdue: AwayPush["sendOverdue"] } {
  const { storage, logger: log, now } = options;
  const fanOut = new FanOut(bus);
  const outbox = new Outbox({
    storage,
    bus,
    retention: options.retention,
    mediaStore: options.mediaStore,
    now,
    clock: options.clock,
    log,
    connectedOwners: fanOut.owners,
  });
  const channels = new ChannelDirectory(storage, now);
  const publicUrls = new PublicUrls(options.publicUrl);
  const sent = new SentPushes();
  const lanes = new LaneScheduler(
    options.maxTurnsPerOwner,
    options.laneLock,
    (error) => log.warn("lane lock failed; the turn runs without it", error),
    laneTaker(storage, options.laneLock),
  );
  // Its push senders and retries, its wait, the storage and the gateway's time, from the options.
  const away = awayPush({
    ...options,
    bus,
    log,
    connectionCount: fanOut.connectionCount,
    publicUrls,
    sent,
  });
  const traffic = new TrafficCounts();
  const budgets = sharedBudgets(options);
  const base = {
    options,
    storage,
    runtime: options.runtime,
    bus,
    authenticator: given.authenticator ?? openAuthenticator(),
    commands,
    events,
    log,
    now,
    lanes,
    traffic,
    admitting: new ConnectionCount(),
    admission: new Admission({
      ...options,
      connects: budgets.connectsPerAddress,
      shed: () => void traffic.hellosShed++,
      failed: (error) => log.error("a transport's admission callback threw", error),
    }),
    budgets,
    store: outbox.store,
    live: outbox.live,
    pushIfAway: away.pushIfAway,
    retractPush: pushRetraction({ push: options.push, storage, log, publicUrls, sent }),
    retractRead: readRetraction({ push: options.push, storage, log, publicUrls }),
    publicUrls,
    ensureDefaultChannel: channels.ensureDefaultChannel,
    resolveLane: channels.resolveLane,
    attach: fanOut.attach,
    detach: fanOut.detach,
    connectionCount: fanOut.connectionCount,
  };
  // The process running a turn holds its asks; answers from other processes reach it on the bus.
  const services = { ...base, asks: new OpenAsks(base) };
  listenForTurns(bus, lanes, (owner) => localTurnFrames(services, owner));
  listenForRelays(services, (entry, answer, respondTo) => arbitrateRelayed(services, entry, answer, respondTo));
  return { services, outbox, sendOverdue: away.sendOverdue };
}
