// Where the example server keeps its data (docs/PROTOCOL.md §10.2): the storage and media store
// that the server runs on, and that the first `user add` adopts the anonymous chats through.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { consoleLogger, type Logger, type MediaStore, type Storage } from "chat-gateway";
import type { UserCliData } from "chat-gateway/http";
import { fsMediaStore } from "chat-gateway/media/fs";
import { memoryStorage } from "chat-gateway/storage/memory";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import type { ServerConfig } from "./config.js";

/**
 * The configured storage, not opened, and how the start line names it. `onFatal` learns that the
 * sql.js database process could not be brought back (without it, that ends the process).
 */
export async function pickStorage(
  config: ServerConfig,
  logger: Logger,
  onFatal?: (error: Error) => void,
): Promise<{ storage: Storage; label: string }> {
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

/** The configured media store: files in <data-dir>/media, or memory with --memory. */
export async function pickMediaStore(config: ServerConfig): Promise<MediaStore> {
  if (config.memory) return (await import("chat-gateway/media/memory")).memoryMediaStore();
  const dir = join(config.dataDir, "media");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // With several processes, <data-dir>/media must be one directory they all see.
  return fsMediaStore({ dir });
}

/** The data the server keeps (GATEWAY_DATA_DIR or DATABASE_URL), for the first user to adopt. */
export async function serverData(config: ServerConfig): Promise<UserCliData> {
  const { storage } = await pickStorage(config, consoleLogger("[chat-gateway]"));
  return { storage, mediaStore: await pickMediaStore(config) };
}
