import type { Owner, Seq } from "chat-gateway";
import type { Sql } from "./sql.js";

/** The highest `seq` ever given to the owner (0 before the first). */
export function lastSeq(sql: Sql, owner: Owner): Seq {
  return (sql.get("SELECT last FROM outbox_last WHERE owner = ?", [owner])?.[0] as number | undefined) ?? 0;
}
