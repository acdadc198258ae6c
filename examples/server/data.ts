// Where the example server keeps its data (docs/PROTOCOL.md §10.2): the storage and media store
// that the server runs on, and that the first `user add` adopts the anonymous chats through.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { consoleLogger, type Logger, type MediaStore } from "chat-gateway";
import type { HookStore, ScheduleStore, Storage } from "chat-gateway/storage";
import type { UserCliData } from "chat-gateway/cli";
import { fsMediaStore } from "chat-gateway/media/fs";
import { memoryStorage } from "chat-gateway/storage/memory";
import { makePrivateDir } from "chat-gateway/storage";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import type { ServerConfig } from "./config.js";

/**
 * The configured storage, not opened, and how the start line names it. Each built-in storage is
 * also the hook and schedule store of its database. `onFatal` learns that the
 * sql.js database process could not be brought back (without it, that ends the process).
 */
export async function pickStorage(
  config: ServerConfig,
  logger: Logger,
  onFatal?: (error: Error) => void,
): Promise<{ storage: Storage & HookStore & ScheduleStore; label: string }> {
  if (config.databaseUrl) {
    // Imported only in this mode, so the optional pg peer is not needed otherwise.
    const { postgresStorage } = await import("chat-gateway/storage/postgres");
    return {
      storage: postgresStorage({ connectionString: config.databaseUrl, schema: config.databaseSchema }),
      label: `postgres (schema ${config.databaseSchema ?? "public"})`,
    };
  }
  if (config.memory) return { storage: memoryStorage(), label: "memory" };
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const dir = join(config.dataDir, "db");
  return { storage: sqlJsStorage({ dir, logger, onFatal }), label: dir };
}

/**
 * Creates the data folder 0700, or tightens it with a warning when it is open to other users:
 * whatever the storage, it holds the users file, devices, the VAPID key and the admin socket, and
 * a local user who can write into it could swap the users file for one of their own.
 */
export async function privateDataDir(config: ServerConfig, logger: Logger): Promise<void> {
  const loosened = await makePrivateDir(config.dataDir, "example server");
  if (loosened) logger.warn(loosened);
}

/**
 * The configured media store: files in <data-dir>/media, or memory with --memory. The folder is
 * made private now, not at the first upload, so one left open to others is tightened at start.
 */
export async function pickMediaStore(config: ServerConfig, logger: Logger): Promise<MediaStore> {
  if (config.memory) return (await import("chat-gateway/media/memory")).memoryMediaStore();
  // With several processes, <data-dir>/media must be one directory they all see.
  const media = fsMediaStore({ dir: join(config.dataDir, "media"), logger });
  await media.prepare();
  return media;
}

/** The data the server keeps (GATEWAY_DATA_DIR or DATABASE_URL), for the first user to adopt. */
export async function serverData(config: ServerConfig): Promise<UserCliData> {
  const logger = consoleLogger("[chat-gateway]");
  const { storage } = await pickStorage(config, logger);
  return { storage, mediaStore: await pickMediaStore(config, logger) };
}
