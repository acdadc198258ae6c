/**
 * `defineStorage()`: a {@link StorageImplementation} checked and normalised once into the
 * {@link Storage} the gateway calls, with the core's fallbacks filled in.
 * @module
 */
// AdoptionRefused and CommitResult for TSDoc links only.
import type {
  AdoptionRefused,
  CommitResult,
  Storage,
  StorageCapabilities,
  StorageImplementation,
} from "../contracts/storage.js";
import { ANONYMOUS_OWNER } from "../protocol/ids.js";
import { REQUIRED_MEMBERS, STORAGE_CAPABILITIES, type CapabilitySpec } from "./capabilities.js";
import { checkedAdoption, keyedCommit } from "./storage-answers.js";

/** Storages this module made: defining one again returns it as it is. */
const defined = new WeakSet<object>();

/**
 * Normalises a storage implementation: checks its required core, takes each optional member it
 * supplies as a declared capability, fills in the core's fallback for each one it does not (see
 * each member of {@link StorageImplementation} for the fallback and its cost), and lists the
 * result in `capabilities`. Methods are bound to `implementation`, so a class instance works.
 * It also does the core's part of the data contract: `commit` hands the implementation each
 * outbox frame with its `redactKey` and rejects on a {@link CommitResult.mediaTaken};
 * `adoptOwner` refuses `from === to` and rejects on an {@link AdoptionRefused}, both with
 * `unsupported` errors.
 * Idempotent: a storage it returned comes back unchanged.
 *
 * ```ts
 * import { defineStorage } from "chat-gateway/storage";
 * export const myStorage = () => defineStorage({ commit, getMessage, history, listChannels, readOutbox, outboxBounds, listDevices, putDevice });
 * ```
 *
 * Options that need a capability the storage lacks (a `mediaStore` without `media`, a shared `bus`
 * without `uniqueClientMsgId`) are refused later, by `createGateway`.
 *
 * @throws {TypeError} naming the member when a required member is missing, when only some of the
 *   members of one capability are given (media needs `getMedia`, `putMedia` and `deleteMedia`), or
 *   when `capabilities` declares a member capability whose members are missing
 */
export function defineStorage(implementation: StorageImplementation): Storage {
  if (defined.has(implementation)) return implementation as Storage;
  if (!implementation || typeof implementation !== "object")
    throw new TypeError("defineStorage: a storage implementation object is required");
  const impl = implementation as unknown as Record<string, unknown>;
  const method = (name: string) => (impl[name] as (...args: unknown[]) => unknown).bind(implementation);
  for (const name of REQUIRED_MEMBERS) {
    if (typeof impl[name] !== "function")
      throw new TypeError(
        `defineStorage: the storage has no ${name}() method; the required core is ${REQUIRED_MEMBERS.join(", ")}`,
      );
  }
  const declared = declaredFlags(implementation.capabilities);
  const core = Object.fromEntries(REQUIRED_MEMBERS.map((name) => [name, method(name)])) as Pick<
    Storage,
    (typeof REQUIRED_MEMBERS)[number]
  >;
  // The implementation answers in plain data: the core keys its frames and words its refusals.
  core.commit = keyedCommit(core.commit);
  const capabilities = {} as StorageCapabilities;
  const members: Record<string, unknown> = {};
  for (const spec of STORAGE_CAPABILITIES) {
    const supplied = suppliedMembers(spec, impl, declared);
    capabilities[spec.name] =
      spec.members.length > 0 ? supplied && declared[spec.name] !== false : declared[spec.name] === true;
    if (supplied) for (const name of spec.members) members[name] = method(name);
    else Object.assign(members, spec.fallback?.(core));
  }
  if (typeof impl.adoptOwner === "function")
    members.adoptOwner = checkedAdoption(method("adoptOwner") as NonNullable<StorageImplementation["adoptOwner"]>);
  const storage = {
    ...core,
    ...members,
    open: typeof impl.open === "function" ? method("open") : async () => undefined,
    close: typeof impl.close === "function" ? method("close") : async () => undefined,
    ping:
      typeof impl.ping === "function"
        ? method("ping")
        : async () => {
            await core.outboxBounds(ANONYMOUS_OWNER);
          },
    capabilities: Object.freeze(capabilities),
    ...(implementation.actionTokens ? { actionTokens: implementation.actionTokens } : {}),
    ...(implementation.duePushes ? { duePushes: implementation.duePushes } : {}),
  } as Storage;
  defined.add(storage);
  return storage;
}

function declaredFlags(given: unknown): Partial<StorageCapabilities> {
  if (given === undefined) return {};
  if (!given || typeof given !== "object")
    throw new TypeError("defineStorage: capabilities must be an object such as { uniqueClientMsgId: true }");
  const known = new Set(STORAGE_CAPABILITIES.map((spec) => spec.name as string));
  for (const [name, value] of Object.entries(given)) {
    if (!known.has(name))
      throw new TypeError(`defineStorage: unknown capability "${name}"; known: ${[...known].join(", ")}`);
    if (typeof value !== "boolean") throw new TypeError(`defineStorage: capabilities.${name} must be true or false`);
  }
  return given as Partial<StorageCapabilities>;
}

/** Whether the implementation supplies every member of the capability; refuses a partial set. */
function suppliedMembers(
  spec: CapabilitySpec,
  impl: Record<string, unknown>,
  declared: Partial<StorageCapabilities>,
): boolean {
  if (spec.members.length === 0) return false;
  const missing = spec.members.filter((name) => typeof impl[name] !== "function");
  if (missing.length > 0 && missing.length < spec.members.length) {
    throw new TypeError(
      `defineStorage: the ${spec.name} capability needs ${spec.members.join(", ")} together; missing ${missing.join(", ")}`,
    );
  }
  if (missing.length > 0 && declared[spec.name] === true)
    throw new TypeError(`defineStorage: capabilities.${spec.name} is declared but ${missing.join(", ")} is missing`);
  return missing.length === 0;
}
