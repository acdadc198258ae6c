import { GatewayError, type ErrorCode } from "chat-gateway/protocol";
import type { JournalOp } from "./apply.js";
import initSqlJs, { type SqlJsStatic } from "sql.js";
import { Engine, type EngineSettings } from "./engine.js";
import type { SqlJsModule } from "./options.js";
import type { ReadName } from "./reads.js";
import { SchemaTooNewError } from "./schema-error.js";

/** One request to the engine: a journaled write or a named read. */
export type EngineCall = { kind: "write"; op: JournalOp } | { kind: "read"; name: ReadName; args: unknown[] };

/** What the storage needs of an engine, wherever it runs. */
export interface EngineLink {
  call(call: EngineCall): Promise<unknown>;
  /** Closes the engine (final snapshot) and, for a process, waits until it has exited. */
  close(): Promise<void>;
}

/** Hands a call to the engine. */
export function dispatch(engine: Engine, call: EngineCall): Promise<unknown> {
  return call.kind === "write" ? engine.write(call.op) : engine.read(call.name, call.args);
}

/** Runs the engine on this thread (the storage's `inProcess`, or a given `sqlJs` module). */
export async function startEngineHere(
  settings: EngineSettings,
  sqlJs: SqlJsModule | undefined,
  warn: (message: string) => void,
): Promise<EngineLink> {
  // The module is sql.js's own (SqlJsModule names only what the public type needs of it).
  const engine = await Engine.open(settings, (sqlJs as SqlJsStatic | undefined) ?? (await initSqlJs()), warn);
  return { call: (call) => dispatch(engine, call), close: () => engine.close() };
}

/** Messages from the storage to the database process; they cross in arrays, one per tick. */
export type ToEngine =
  | { t: "open"; id: number; settings: EngineSettings }
  | { t: "call"; id: number; call: EngineCall }
  | { t: "close"; id: number };

/** Messages from the database process, in arrays as well: a reply to request `id`, or a warning for the logger. */
export type FromEngine =
  | { t: "reply"; id: number; value?: unknown; error?: WireError }
  | { t: "warn"; message: string };

/** An error as it crosses the process boundary: enough to rebuild the class a caller checks. */
export interface WireError {
  name: string;
  message: string;
  /** The protocol code of a GatewayError, or the errno code of a system error. */
  code?: string;
  found?: number;
  supported?: number;
}

export function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const { found, supported, code } = error as Partial<SchemaTooNewError> & { code?: unknown };
  return {
    name: error.name,
    message: error.message,
    code: typeof code === "string" ? code : undefined,
    found,
    supported,
  };
}

/** Rebuilds an error of the same class where the caller can tell classes apart. */
export function fromWire(wire: WireError): Error {
  if (wire.name === "GatewayError") return new GatewayError(wire.code as ErrorCode, wire.message);
  if (wire.name === "SchemaTooNewError") return new SchemaTooNewError(wire.found!, wire.supported!);
  const error = wire.name === "TypeError" ? new TypeError(wire.message) : new Error(wire.message);
  if (wire.name !== error.name) error.name = wire.name;
  if (wire.code !== undefined) Object.assign(error, { code: wire.code });
  return error;
}
