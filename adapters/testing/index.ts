/**
 * The conformance suites of the {@link Storage} and {@link MediaStore} contracts, for anyone who
 * writes an implementation of their own: the built-in storages and media stores run the same
 * suites. Each function declares vitest tests, so call it at the top level of a test file and run
 * it with vitest (an optional peer dependency, needed only for this entry):
 *
 * ```ts
 * import { describeStorageConformance, describeMediaStoreConformance } from "chat-gateway/testing";
 * import { myStorage, myMediaStore } from "./my-adapters.js";
 * describeStorageConformance("my storage", () => myStorage());
 * describeMediaStoreConformance("my media store", () => myMediaStore());
 * ```
 *
 * A storage that passes can back a gateway: everything the gateway relies on (atomic commits,
 * outbox order, history paging, search, deletion and redaction, owner isolation) is checked here.
 * @module
 */
// Imported for the links above: the contracts these suites check live in the core entry.
import type { MediaStore, Storage } from "chat-gateway";
export { describeStorageConformance, type StorageFactory, type StorageUnderTest } from "./storage.js";
export { describeMediaStoreConformance, type MediaStoreFactory } from "./media-store.js";
