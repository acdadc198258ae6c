// The database process of chat-gateway/storage/sqljs: it owns the sql.js database, its journal and
// its snapshots, and answers the storage over the IPC channel. sql.js blocks whatever thread runs
// it, so it runs here, where it never stalls the process that serves sockets. The parent holds the
// folder's lock; this process lives only as long as its channel to the parent.
//
// The same entry started with the argument `snapshot` is a snapshot process instead: the database
// process starts one whenever a snapshot is due, so that it never runs an export itself (seconds
// at a million messages, during which it could answer nothing; see snapshot-process.ts).
import initSqlJs from "sql.js";
import { ChannelBatch, roughBytes } from "./channel-batch.js";
import { Engine } from "./engine.js";
import { FairReads } from "./fair-reads.js";
import { dispatch, toWire, type FromEngine, type ToEngine } from "./engine-calls.js";
import { serveSnapshot } from "./snapshot-main.js";
import { SNAPSHOT_MODE, TEST_HOOK_ENV, snapshotProcess } from "./snapshot-process.js";

let engine: Engine | undefined;
/** Reads take turns per owner (writes apply in arrival order, as the journal needs). */
const reads = new FairReads();

/**
 * Replies and warnings leave once per turn of the event loop, as one message of a few MiB at most
 * (see {@link ChannelBatch}).
 */
const out = new ChannelBatch<FromEngine>((messages, done) => {
  if (process.connected) process.send!(messages, undefined, undefined, done);
});

/** Queues a message for the storage; a reply that cannot be copied to it is answered with that error. */
function send(message: FromEngine): void {
  const failed = (error: Error) => {
    if (message.t === "reply" && !message.error && process.connected)
      out.push({ t: "reply", id: message.id, error: toWire(error) });
  };
  out.push(message, failed, message.t === "reply" ? roughBytes(message.value) : 0);
}

async function handle(message: ToEngine): Promise<unknown> {
  switch (message.t) {
    case "open": {
      const warn = (text: string) => send({ t: "warn", message: text });
      // Snapshot processes run this very file.
      const snapshotter = snapshotProcess(process.argv[1], warn);
      engine = await Engine.open(message.settings, await initSqlJs(), warn, {
        snapshotter,
        inPlaceBelowBytes: process.env[TEST_HOOK_ENV] ? 0 : undefined,
      });
      return undefined;
    }
    case "call": {
      if (!engine) throw new Error("sql.js storage: the storage is not open yet");
      const { call } = message;
      if (call.kind === "write") return dispatch(engine, call);
      const open = engine;
      // A read names its owner first, or in its scope (waitingTurns, unfinishedMessages).
      const first = call.args[0] as string | { owner?: string } | undefined;
      return reads.run(typeof first === "string" ? first : (first?.owner ?? ""), () => dispatch(open, call));
    }
    case "close":
      await engine?.close();
      engine = undefined;
      return undefined;
  }
}

function serveDatabase(): void {
  // The parent gone (a crash, SIGKILL) means nobody holds the lock for this process any more: stop
  // at once, before another process takes the folder over.
  process.on("disconnect", () => process.exit(0));
  // Terminal signals reach the whole process group; the parent decides when this process stops,
  // after a final snapshot, and a parent that dies takes it down through the disconnect above.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => undefined);
  process.on("message", (messages: ToEngine[]) => {
    for (const message of messages) {
      handle(message).then(
        (value) => send({ t: "reply", id: message.id, value }),
        (error: unknown) => send({ t: "reply", id: message.id, error: toWire(error) }),
      );
    }
  });
}

if (process.argv[2] === SNAPSHOT_MODE) void serveSnapshot(process.argv[3], Number(process.argv[4]));
else serveDatabase();
