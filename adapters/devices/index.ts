/**
 * What may sign in besides a person with a password (docs/PROTOCOL.md §9): paired devices (a
 * pairing code or link redeemed into a device token, listed and revoked under `/api/devices`) and
 * API keys for other apps (`cgk_…`, under `/api/keys`). `createLoginProtection` of
 * `chat-gateway/login` serves both APIs; this entry holds the stores they keep their records in: in
 * memory, in a file beside the users file, or your own behind {@link DeviceTokenStore} and
 * {@link ApiKeyStore}.
 * @module
 */
export { memoryDeviceStore, DEVICE_TOKEN_SECONDS } from "../http/device-store.js";
export type { DeviceAddOutcome, DeviceTokenStore, PairedDevice, StoredDevice } from "../http/device-store.js";
export { fileDeviceStore } from "../http/device-file-store.js";
export { memoryApiKeyStore, MAX_API_KEYS_PER_USER } from "../http/api-key-store.js";
export type { ApiKeyStore, ApiKeyInfo, StoredApiKey } from "../http/api-key-store.js";
export { fileApiKeyStore } from "../http/api-key-file-store.js";
