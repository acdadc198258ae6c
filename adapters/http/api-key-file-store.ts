/**
 * An `ApiKeyStore` in a JSON file beside the users file (docs/PROTOCOL.md §19.1): keys survive a
 * restart, and the key CLI adds or removes one while the server runs.
 * @module
 */
import path from "node:path";
import { apiKeyTable, type ApiKeyStore, type StoredApiKey } from "./api-key-store.js";
import { lockedTableFile } from "./locked-table-file.js";

/** The key store file that goes with a users file: `keys.json` in its folder. */
export function keysFileOf(usersFile: string): string {
  return path.join(path.dirname(usersFile), "keys.json");
}

function isKey(value: unknown): value is StoredApiKey {
  const k = value as Record<string, unknown>;
  return (
    typeof k === "object" &&
    k !== null &&
    typeof k.key_id === "string" &&
    typeof k.username === "string" &&
    typeof k.name === "string" &&
    typeof k.created === "number" &&
    typeof k.key_sha256 === "string" &&
    /^[0-9a-f]{64}$/.test(k.key_sha256)
  );
}

/**
 * An {@link ApiKeyStore} in a JSON file (mode 0600, replaced atomically, changed under a lock
 * file shared with every process using it), holding only the SHA-256 of each key. While a
 * listener is subscribed the file is looked at every 250 ms and each key gone from it is
 * reported, so the connections it opened close.
 */
export function fileApiKeyStore(file: string): ApiKeyStore {
  const store = lockedTableFile(file, {
    field: "keys",
    what: "API key store",
    contents: "the keys",
    isRecord: isKey,
    keyOf: (k) => k.key_sha256,
  });
  const change = <T>(apply: (ops: ReturnType<typeof apiKeyTable>) => Promise<T>) =>
    store.change((draft) => apply(apiKeyTable(draft)));
  const read = async () => apiKeyTable(await store.read());
  return {
    add: (key, max) => change((ops) => ops.add(key, max)),
    find: async (digest) => (await read()).find(digest),
    list: async (username) => (await read()).list(username),
    remove: (username, id) => change((ops) => ops.remove(username, id)),
    // A user with no key costs no write (the CLI calls it on every remove and set-password).
    removeUser: async (username) =>
      (await (await read()).list(username)).length === 0 ? [] : change((ops) => ops.removeUser(username)),
    onRevocation: (listener) => store.onGone(listener),
  };
}
