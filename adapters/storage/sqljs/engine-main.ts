// The database process of chat-gateway/storage/sqljs: it owns the sql.js database, its journal and
// its snapshots, and answers the storage over the IPC channel. sql.js blocks whatever thread runs
// it (an export takes seconds at a million messages, and its copy doubles the memory), so it runs
// here, where neither stalls the process that serves sockets. The parent holds the folder's lock;
// this process lives only as long as its channel to the parent.
import initSqlJs from "sql.js";
import { Engine } from "./engine.js";
import { dispatch, toWire, type FromEngine, type ToEngine } from "./engine-calls.js";

let engine: Engine | undefined;

function send(message: FromEngine): void {
  if (process.connected) process.send!(message);
}

// The parent gone (a crash, SIGKILL) means nobody holds the lock for this process any more: stop
// at once, before another process takes the folder over.
process.on("disconnect", () => process.exit(0));
// Terminal signals reach the whole process group; the parent decides when this process stops,
// after a final snapshot, and a parent that dies takes it down through the disconnect above.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => undefined);

async function handle(message: ToEngine): Promise<unknown> {
  switch (message.t) {
    case "open":
      engine = await Engine.open(message.settings, await initSqlJs(), (text) => send({ t: "warn", message: text }));
      return undefined;
    case "call":
      if (!engine) throw new Error("sql.js storage: the storage is not open yet");
      return dispatch(engine, message.call);
    case "close":
      await engine?.close();
      engine = undefined;
      return undefined;
  }
}

process.on("message", (message: ToEngine) => {
  handle(message).then(
    (value) => send({ t: "reply", id: message.id, value }),
    (error: unknown) => send({ t: "reply", id: message.id, error: toWire(error) }),
  );
});
