/**
 * Ranking in SQL: the search candidates' query words matched and occurrences, counted on their
 * `folded` column, so that only the best `limit` rows' texts leave PostgreSQL.
 * @module
 */

/**
 * The statement that ranks the rows of `candidates` (columns `message_id`, `ts`, `folded`; `$1`
 * the owner) as `matchText` and `compareMatches` do, and returns the best `limit` with what a hit
 * needs from `messages`. A term's occurrences are the occurrences of `' ' || term` in `folded`
 * (see `foldedWords` in search.ts): its length drop under `replace`, divided by the needle's
 * length. That is a few byte searches in C per row, where counting from tsvector positions means
 * unnesting every lexeme (7 ms for the 1,000 candidates of a common word, measured). Rows that
 * match no term by this count (a word PostgreSQL matched by the tsvector that `matchText` cuts
 * otherwise) are dropped, as `matchText` drops them. `exclude` leaves out messages already found
 * by an earlier step.
 */
export function rankQuery(s: string, candidates: { text: string; values: unknown[] }, terms: string[], limit: number, exclude: string[] = []): { text: string; values: unknown[] } {
  const values = [...candidates.values];
  const counts = terms.map((t, i) => {
    values.push(` ${t}`);
    const needle = `$${values.length}::text`;
    return `(octet_length(folded) - octet_length(replace(folded, ${needle}, ''))) / octet_length(${needle}) AS h${i}`;
  });
  const matched = terms.map((_, i) => `(h${i} > 0)::int`).join(" + ");
  const hits = terms.map((_, i) => `h${i}`).join(" + ");
  let skip = "";
  if (exclude.length) {
    values.push(exclude);
    skip = ` WHERE message_id <> ALL($${values.length}::text[])`;
  }
  const order = "terms DESC, hits DESC, ts DESC, message_id DESC";
  // As `slice(0, limit)` would: a fraction cut down, no bound at all for Infinity.
  const cap = Number.isFinite(limit) ? String(Math.floor(limit)) : "ALL";
  return {
    text: `SELECT r.message_id, m.chat_id, m.thread_key, m.role, m.ts, m.text FROM (
      SELECT message_id, ts, ${matched} AS terms, ${hits} AS hits FROM (
        SELECT message_id, ts, ${counts.join(", ")} FROM (${candidates.text}) c${skip} OFFSET 0
      ) counted WHERE ${matched} > 0 ORDER BY ${order} LIMIT ${cap}
    ) r JOIN ${s}.messages m ON m.owner = $1 AND m.message_id = r.message_id ORDER BY r.${order.replaceAll(", ", ", r.")}`,
    values,
  };
}

/**
 * The rows of `message_search` with the given ids, as {@link rankQuery} candidates (a chat walk's
 * matches). Joined from `unnest`: as `message_id = ANY($2)` the planner estimates the selectivity
 * of each of the thousand ids, about 1 ms.
 */
export function listedCandidates(s: string, owner: string, ids: string[]): { text: string; values: unknown[] } {
  return {
    text: `SELECT x.message_id, x.ts, x.folded FROM unnest($2::text[]) AS c(message_id) JOIN ${s}.message_search x ON x.owner = $1 AND x.message_id = c.message_id`,
    values: [owner, ids],
  };
}
