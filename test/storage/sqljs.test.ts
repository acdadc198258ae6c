import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sqlJsStorage } from "chat-gateway/storage/sqljs";
import { describeStorageConformance } from "chat-gateway/testing";

describeStorageConformance(
  "sql.js",
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-sqljs-"));
    return {
      storage: sqlJsStorage({ dir }),
      reopen: () => sqlJsStorage({ dir }),
      cleanup: () => rm(dir, { recursive: true, force: true }),
    };
  },
  { persists: true },
);
