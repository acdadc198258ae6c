/**
 * `adoptOwner` of the PostgreSQL storage: one transaction that re-labels every row of one owner
 * with another, so the move is all or nothing however it ends.
 * @module
 */
import type { Owner } from "chat-gateway";
import type { AdoptedCounts, AdoptionRefused } from "chat-gateway/storage";
import type { Database } from "./database.js";

/**
 * The tables keyed by owner that move, besides `owners` (the seq counter), which moves on its own.
 * `devices` never moves: whoever registered a device while login was off must not get the new
 * owner's pushes.
 */
const TABLES = ["channels", "messages", "outbox", "media"] as const;

/** Rows that move with the channels they post into, not counted as history. */
const WITH_CHANNELS = ["hooks", "schedules"] as const;

/** Moves everything of `from` to `to`, refusing a `to` that has data (see `StorageImplementation.adoptOwner`). */
export function adoptOwner(db: Database): (from: Owner, to: Owner) => Promise<AdoptedCounts | AdoptionRefused> {
  const { s } = db;
  return async (from, to) => {
    return await db.transaction(async (client): Promise<AdoptedCounts | AdoptionRefused> => {
      // Both counter rows locked, in a fixed order: a commit of either owner in any process waits
      // for the move (it advances the same row), and two adoptions cannot deadlock.
      await client.query(`INSERT INTO ${s}.owners (owner) VALUES ($1), ($2) ON CONFLICT (owner) DO NOTHING`, [
        from,
        to,
      ]);
      const { rows: counters } = await client.query<{ owner: string; last_seq: string }>(
        `SELECT owner, last_seq FROM ${s}.owners WHERE owner = ANY($1::text[]) ORDER BY owner FOR UPDATE`,
        [[from, to]],
      );
      const last = (owner: Owner) => Number(counters.find((row) => row.owner === owner)?.last_seq ?? 0);
      const holds = async (owner: Owner, tables: readonly string[]) =>
        ((
          await client.query(
            `${tables.map((table) => `SELECT 1 FROM ${s}.${table} WHERE owner = $1`).join(" UNION ALL ")} LIMIT 1`,
            [owner],
          )
        ).rowCount ?? 0) > 0;
      if (!(await holds(from, TABLES))) return { channels: 0, messages: 0, outbox: 0, media: 0 };
      if (last(to) > 0 || (await holds(to, [...TABLES, "devices"]))) return { refused: "target_has_data" };
      const counts: Record<string, number> = {};
      for (const table of TABLES) {
        // A media record names its owner inside its JSON too.
        const data = table === "media" ? ", data = jsonb_set(data::jsonb, '{owner}', to_jsonb($2::text))::text" : "";
        const redacted = table === "outbox" ? " AND NOT (type = '' AND payload = '{}')" : "";
        await client.query(`UPDATE ${s}.${table} SET owner = $2${data} WHERE owner = $1`, [from, to]);
        counts[table] = Number(
          (
            await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${s}.${table} WHERE owner = $1${redacted}`, [
              to,
            ])
          ).rows[0]!.n,
        );
      }
      // The watermarks go with the history they mark (docs/PROTOCOL.md §15).
      await client.query(`UPDATE ${s}.read_marks SET owner = $2 WHERE owner = $1`, [from, to]);
      await client.query(`UPDATE ${s}.lane_fences SET owner = $2 WHERE owner = $1`, [from, to]);
      for (const table of WITH_CHANNELS)
        await client.query(`UPDATE ${s}.${table} SET owner = $2 WHERE owner = $1`, [from, to]);
      // `from` keeps its counter: seqs are never reused, also by an owner that starts over.
      await client.query(`UPDATE ${s}.owners SET last_seq = $2 WHERE owner = $1`, [to, last(from)]);
      return { channels: counts.channels!, messages: counts.messages!, outbox: counts.outbox!, media: counts.media! };
    });
  };
}
