/**
 * Ranking in SQL: the search candidates' query words matched and occurrences, counted on their
 * `folded` column, so that only the best `limit` rows' texts leave PostgreSQL.
 * @module
 */
import { WHOLLY_INDEXED_BYTES } from "./search.js";

/** A statement and its parameters; `$1` is always the owner. */
export interface Statement {
  text: string;
  values: unknown[];
}

const ORDER = "terms DESC, hits DESC, ts DESC, message_id DESC";

/** `statement` renumbered to follow `values` (which it extends), its `$1` still the owner. */
function appended(statement: Statement, values: unknown[]): string {
  const offset = values.length - 1;
  values.push(...statement.values.slice(1));
  return statement.text.replace(/\$(\d+)/g, (_, n: string) => (n === "1" ? "$1" : `$${Number(n) + offset}`));
}

/**
 * The best `limit` rows of `candidates` (columns `message_id`, `ts`, `folded`, `words`), ranked as
 * `matchText` and `compareMatches` do, as `(message_id, ts, terms, hits)`; `skip` is a condition
 * on `message_id` that leaves out what an earlier step found. A term's occurrences are the
 * occurrences of `' ' || term` in `folded` (see `foldedWords` in search.ts): its length drop
 * under `replace`, divided by the needle's length. That is a few byte searches in C per row,
 * where counting from tsvector positions means unnesting every lexeme (7 ms for the 1,000
 * candidates of a common word, measured). `OFFSET 0` keeps the counts in their own subquery:
 * flattened, each would be computed up to three times. Rows that match no term by this count are
 * dropped, as `matchText` drops them. A term other than `commonest` (given for a step that
 * wants any term) is counted only where `words` has it, or where `folded` is too long for `words`
 * to hold every word: `words` holds the words of `folded`, so elsewhere its count is 0, and the
 * lexeme test costs a fraction of the byte search. The commonest term is in most candidates.
 */
function ranked(
  candidates: Statement,
  values: unknown[],
  terms: string[],
  limit: number,
  skip = "",
  commonest?: string,
): string {
  const source = appended(candidates, values);
  const counts = terms.map((t, i) => {
    values.push(` ${t}`);
    const needle = `$${values.length}::text`;
    const count = `(octet_length(folded) - octet_length(replace(folded, ${needle}, ''))) / octet_length(${needle})`;
    if (commonest === undefined || t === commonest) return `${count} AS h${i}`;
    values.push(`'${t}':*`);
    return `CASE WHEN words @@ $${values.length}::tsquery OR octet_length(folded) > ${WHOLLY_INDEXED_BYTES} THEN ${count} ELSE 0 END AS h${i}`;
  });
  const matched = terms.map((_, i) => `(h${i} > 0)::int`).join(" + ");
  const hits = terms.map((_, i) => `h${i}`).join(" + ");
  // As `slice(0, limit)` would: a fraction cut down, no bound at all for Infinity.
  const cap = Number.isFinite(limit) ? String(Math.floor(limit)) : "ALL";
  return `SELECT message_id, ts, ${matched} AS terms, ${hits} AS hits FROM (
      SELECT message_id, ts, ${counts.join(", ")} FROM (${source}) c${skip ? ` WHERE ${skip}` : ""} OFFSET 0
    ) counted WHERE ${matched} > 0 ORDER BY ${ORDER} LIMIT ${cap}`;
}

/** The ranked rows `r` (with `step`) joined to what a hit needs from `messages`, best first. */
function withTexts(s: string, rows: string): string {
  return `SELECT r.step, r.message_id, m.chat_id, m.thread_key, m.role, m.ts, m.text FROM (${rows}) r
    JOIN ${s}.messages m ON m.owner = $1 AND m.message_id = r.message_id ORDER BY r.step, r.${ORDER.replaceAll(", ", ", r.")}`;
}

/**
 * The statement that ranks the rows of `candidates` (see {@link ranked}) and returns the best
 * `limit` with what a hit needs from `messages`: only those texts leave PostgreSQL. `exclude`
 * leaves out messages an earlier step found; `commonest` is given for a step that wants any term.
 */
export function rankQuery(
  s: string,
  candidates: Statement,
  terms: string[],
  limit: number,
  exclude: string[] = [],
  commonest?: string,
): Statement {
  const values: unknown[] = [candidates.values[0]];
  let skip = "";
  if (exclude.length) {
    values.push(exclude);
    skip = `message_id <> ALL($${values.length}::text[])`;
  }
  return {
    text: withTexts(s, `SELECT 1 AS step, * FROM (${ranked(candidates, values, terms, limit, skip, commonest)}) one`),
    values,
  };
}

/**
 * Both steps of a search of several words in one statement, one round trip: the best `limit`
 * messages with every word (`step` 1), then, only when they are fewer than `limit`, the best
 * `limit` with any word that the first step did not find (`step` 2; the caller keeps as many as
 * are missing). The second step's condition is a one-time filter: when the first step is full,
 * PostgreSQL does not run the second at all. `commonest` is the term the planner expects most of
 * (see {@link ranked}).
 */
export function bothStepsQuery(
  s: string,
  every: Statement,
  any: Statement,
  terms: string[],
  limit: number,
  commonest: string,
): Statement {
  const values: unknown[] = [every.values[0]];
  const first = ranked(every, values, terms, limit);
  const second = ranked(any, values, terms, limit, "message_id NOT IN (SELECT message_id FROM first)", commonest);
  const cap = Number.isFinite(limit) ? String(Math.floor(limit)) : "'Infinity'::float8";
  return {
    text: `WITH first AS MATERIALIZED (${first})
      ${withTexts(s, `SELECT 1 AS step, * FROM first UNION ALL SELECT 2 AS step, * FROM (${second}) two WHERE (SELECT count(*) FROM first) < ${cap}`)}`,
    values,
  };
}

/**
 * The rows of `message_search` with the given ids, as candidates (a chat walk's matches). Joined
 * from `unnest`: as `message_id = ANY($2)` the planner estimates the selectivity of each of the
 * thousand ids, about 1 ms.
 */
export function listedCandidates(s: string, owner: string, ids: string[]): Statement {
  return {
    text: `SELECT x.message_id, x.ts, x.folded, x.words FROM unnest($2::text[]) AS c(message_id) JOIN ${s}.message_search x ON x.owner = $1 AND x.message_id = c.message_id`,
    values: [owner, ids],
  };
}
