import type pg from "pg";
import type { Owner, SearchHit, StoredMessage } from "chat-gateway";
import type { SearchQuery } from "chat-gateway/storage";
import { LIMITS } from "chat-gateway/protocol";
import {
  byRank,
  candidatesQuery,
  estimatesQuery,
  plannedRows,
  queryTerms,
  rank,
  scopeLane,
  toHit,
  totalQuery,
  walkQuery,
  type Ranked,
} from "./search.js";
import { bothStepsQuery, listedCandidates, rankQuery, type Statement } from "./search-rank.js";
import { preparedNames } from "./prepared.js";

/** Matches ranked per search step (docs/PROTOCOL.md §5): a common word costs the same at any history size. */
export const CANDIDATES = LIMITS.searchCandidates;
/**
 * Newest messages of a chat or thread the walk of {@link walkQuery} reads before it gives up and
 * asks GIN: enough to find {@link CANDIDATES} matches where one message in four has the word.
 */
export const WALK_WINDOW = 4 * CANDIDATES;
/**
 * Expected matches in scope past which the walk is tried. Twice {@link CANDIDATES}: for a lexeme
 * not in its statistics the planner guesses half the rarest listed one's share (about 1,200 rows
 * at a million messages), which must not send every chat without the word on the walk.
 */
export const WALK_FROM = 2 * CANDIDATES;
/**
 * Expected matches up to which a step reads its candidates' texts and ranks them in JS, as before
 * the ranking statement: for a few rows, shipping their texts costs less than planning that
 * statement (about 0.25 ms), and no more once both run on kept plans (prepared.ts; 0.28 against
 * 0.30 ms for ten matches). Both rank alike, so a wrong estimate costs time, never results.
 */
export const FEW = 100;
/**
 * How many rows of `messages_recent` the newest-first walk reads for the cost of one match that
 * GIN hands over and the sort orders (measured at 10,000 messages: 5,000 walked rows 1.1 ms,
 * 2,000 GIN matches and their sort 1.4 ms). See {@link walksAllChats}.
 */
const WALKED_PER_MATCH = 3;
/** Planner estimates kept per process: they only change when the table is analysed. */
const ESTIMATES_KEPT = 1024;
/** How long a kept estimate is used, ms: autovacuum's ANALYZE of a busy table is minutes apart. */
const ESTIMATE_TTL_MS = 60_000;

/**
 * True when a step across all chats with `expected` matches in a table of `total` search rows
 * should walk `messages_recent` newest first rather than let GIN collect its matches: the walk
 * reads about `CANDIDATES * total / expected` rows, GIN hands over `expected` matches that must
 * then be sorted. At a million messages the planner makes this choice itself; at ten thousand it
 * prices the walk above GIN and a sort of 2,000 matches, 1.4 ms where the walk takes 1.1 ms.
 */
export function walksAllChats(expected: number, total: number): boolean {
  return expected >= CANDIDATES && WALKED_PER_MATCH * expected * expected >= CANDIDATES * total;
}

type Row = {
  message_id: string;
  chat_id: string;
  thread_key: string;
  role: StoredMessage["role"];
  ts: string;
  text: string;
};
/** A row as a step reads it: a walk also says whether each row matched (`hit`) and its place (`n`). */
type ReadRow = Row & { hit?: boolean; n?: string };

/**
 * One search as its steps see it: the schema, how a statement is read (prepared or not), whose
 * messages, what was asked, its words, and the search rows in the table as the planner counts them.
 */
interface SearchRun {
  s: string;
  read: (statement: Statement) => Promise<ReadRow[]>;
  owner: Owner;
  q: SearchQuery;
  terms: string[];
  total: number;
}

/** A term with the planner's expected matches of it in scope. */
type Estimated = { t: string; rows: number };

/**
 * The planner's expected matches of each term in scope: one round trip for those not kept from
 * an earlier search, so that repeated searches of a word or chat do not pay for planning twice.
 */
function plannerEstimates(
  s: string,
  pool: () => Promise<pg.Pool>,
): (q: SearchQuery, terms: string[]) => Promise<{ rows: number[]; total: number }> {
  // Keyed by the lexeme prefix asked of GIN (lane token and term), the newest last.
  const kept = new Map<string, { rows: number; at: number }>();
  // The table's row count, kept as the estimates are; its key is no lexeme (those never start with a space).
  const TOTAL = " total";
  const fresh = (key: string, now: number) => (kept.get(key)?.at ?? -Infinity) > now - ESTIMATE_TTL_MS;
  return async (q, terms) => {
    const now = Date.now();
    const keys = terms.map((t) => `${scopeLane(q)}${t}`);
    const missing = terms.filter((_, i) => !fresh(keys[i], now));
    const statements = missing.length ? [estimatesQuery(s, q, missing)] : [];
    if (!fresh(TOTAL, now)) statements.push(totalQuery(s));
    if (statements.length) {
      const results = (await (await pool()).query(statements.join(";\n"))) as unknown as
        | pg.QueryResult
        | pg.QueryResult[];
      const missingKeys = [...missing.map((t) => `${scopeLane(q)}${t}`), TOTAL];
      (Array.isArray(results) ? results : [results]).forEach((r, i) => {
        const key = missingKeys[i];
        kept.delete(key);
        kept.set(key, { rows: plannedRows(r.rows[0] as Record<string, unknown>), at: now });
        if (kept.size > ESTIMATES_KEPT) kept.delete(kept.keys().next().value!);
      });
    }
    return { rows: keys.map((k) => kept.get(k)?.rows ?? Infinity), total: kept.get(TOTAL)?.rows ?? Infinity };
  };
}

const toMessage = (r: Row): Ranked["message"] => ({
  message_id: r.message_id,
  chat_id: r.chat_id,
  thread_id: r.thread_key || null,
  role: r.role,
  ts: Number(r.ts),
  text: r.text,
});

/** True when a step with this many expected matches walks the scope first (see {@link candidates}). */
const walks = (q: SearchQuery, expected: number) => q.scope === "chat" && expected > WALK_FROM;

/** True when a step across all chats walks `messages_recent` newest first (see {@link walksAllChats}). */
const walksAll = (q: SearchQuery, expected: number, total: number) =>
  q.scope !== "chat" && walksAllChats(expected, total);

/** Rows ranked in SQL, ranked again in JS on their text: the same order, and the snippet's offset. */
const hitsOf = (rows: Row[], terms: string[]) =>
  rows
    .map((r) => rank(toMessage(r), terms))
    .filter((r): r is Ranked => r !== undefined)
    .sort(byRank);

/** The statement giving the newest {@link CANDIDATES} matches of a step, as `rankQuery` candidates. */
async function candidates(run: SearchRun, terms: string[], mode: "all" | "any", expected: number): Promise<Statement> {
  const { s, owner, q } = run;
  if (walks(q, expected)) {
    const found = await run.read(walkQuery(s, owner, q, terms, mode, CANDIDATES, WALK_WINDOW));
    const hits = found.filter((r) => r.hit);
    // Complete when it found enough, or when the window was the whole scope (its last row not reached).
    if (hits.length >= CANDIDATES || !found.some((r) => Number(r.n) === WALK_WINDOW))
      return listedCandidates(
        s,
        owner,
        hits.slice(0, CANDIDATES).map((r) => r.message_id),
      );
  }
  return candidatesQuery(s, owner, q, terms, mode, CANDIDATES, { newest: walksAll(q, expected, run.total) });
}

/** The best `limit` of a step's newest matches of `order`, read with their texts and ranked in JS (see {@link FEW}). */
async function fewRanked(
  run: SearchRun,
  order: string[],
  mode: "all" | "any",
  limit: number,
  seen: Set<string>,
): Promise<Ranked[]> {
  const rows = await run.read(candidatesQuery(run.s, run.owner, run.q, order, mode, CANDIDATES, { texts: true }));
  return hitsOf(
    rows.filter((r) => !seen.has(r.message_id)),
    run.terms,
  ).slice(0, limit);
}

/** Both steps of a search the planner expects at most {@link FEW} matches of, ranked in JS. */
async function fewSteps(run: SearchRun, order: string[]): Promise<Ranked[]> {
  const { q, terms } = run;
  const top = await fewRanked(run, order, "all", q.limit, new Set());
  if (top.length >= q.limit || terms.length < 2) return top;
  return top.concat(
    await fewRanked(run, terms, "any", q.limit - top.length, new Set(top.map((r) => r.message.message_id))),
  );
}

/**
 * Both steps of a search of several words. When the "any" step needs no walk, one statement
 * runs both (`bothStepsQuery`); otherwise the walk decides after the first step. The ranking
 * statements count the terms rarest first, so the commonest is always the last and a statement's
 * text depends on how many words there are, not on which is common: one prepared statement each.
 */
async function severalWords(run: SearchRun, byEstimate: Estimated[], every: Statement): Promise<Ranked[]> {
  const { s, owner, q, terms, read } = run;
  const any = byEstimate.reduce((sum, e) => sum + e.rows, 0);
  const order = byEstimate.map((e) => e.t);
  const commonest = order[order.length - 1];
  if (!walks(q, any)) {
    const anyStep = candidatesQuery(s, owner, q, terms, "any", CANDIDATES, { newest: walksAll(q, any, run.total) });
    const rows = (await read(bothStepsQuery(s, every, anyStep, order, q.limit, commonest))) as Array<
      Row & { step: number }
    >;
    const first = hitsOf(
      rows.filter((r) => r.step === 1),
      terms,
    );
    return first.concat(
      hitsOf(
        rows.filter((r) => r.step === 2),
        terms,
      ).slice(0, q.limit - first.length),
    );
  }
  const first = hitsOf(await read(rankQuery(s, every, order, q.limit)), terms);
  if (first.length >= q.limit) return first;
  const seen = first.map((r) => r.message.message_id);
  return first.concat(
    hitsOf(
      await read(
        rankQuery(s, await candidates(run, terms, "any", any), order, q.limit - first.length, seen, commonest),
      ),
      terms,
    ),
  );
}

/** Both steps of a search ranked in SQL: the "all" step's candidates, then one word's or several words' ranking. */
async function rankedSteps(run: SearchRun, byEstimate: Estimated[]): Promise<Ranked[]> {
  const { s, q, terms } = run;
  const every = await candidates(
    run,
    byEstimate.map((e) => e.t),
    "all",
    byEstimate[0].rows,
  );
  return terms.length > 1
    ? severalWords(run, byEstimate, every)
    : hitsOf(await run.read(rankQuery(s, every, terms, q.limit)), terms);
}

/**
 * The search of the PostgreSQL storage. Messages with every word first, then with any; each step
 * ranks at most the newest {@link CANDIDATES} matches in scope, as the other storages do. The
 * ranking runs in SQL (`rankQuery`, both steps in one statement for several words), so only the
 * best `limit` texts are read and sent; JS then finds each one's snippet. When the planner expects
 * at most {@link FEW} matches, the candidates' texts are read and ranked in JS instead.
 *
 * In a chat or thread scope where the planner expects more than {@link WALK_FROM} matches, the
 * newest messages of the scope are walked first through `messages_chat_recent` or
 * `messages_thread_recent`: when most of a chat has the word, that reads about a thousand rows
 * instead of every match GIN would hand over (20,000 heap pages for a 20,000-message chat). The
 * planner does not choose this walk itself: it multiplies the chat's and the word's selectivities,
 * which are correlated. When the walk's window holds fewer matches than needed and the scope goes
 * on past it, GIN answers as it would have. Both paths test the same column with the same query,
 * so the path never changes the results.
 *
 * With `prepared` (the default), each statement runs as a named prepared statement (prepared.ts),
 * and since its plan does not depend on the words (see `candidatesQuery`), PostgreSQL settles on
 * a generic plan after five runs on a connection instead of planning every search: a sixth of a
 * common word's statement time and a fifth of two words', at 10,000 messages as at a million
 * (bench/RESULTS.md).
 */
export function postgresSearch(
  s: string,
  pool: () => Promise<pg.Pool>,
  prepared = true,
): (owner: Owner, q: SearchQuery) => Promise<SearchHit[]> {
  const name = preparedNames(prepared);
  const read = async ({ text, values }: Statement) =>
    (await (await pool()).query({ name: name(text), text, values })).rows as ReadRow[];
  const estimates = plannerEstimates(s, pool);

  return async (owner, q) => {
    const terms = queryTerms(q.query);
    if (!terms.length || q.limit < 1) return [];
    const { rows: expected, total } = await estimates(q, terms);
    const byEstimate = terms.map((t, i) => ({ t, rows: expected[i] ?? Infinity })).sort((a, b) => a.rows - b.rows);
    const run: SearchRun = { s, read, owner, q, terms, total };
    const few = byEstimate.reduce((sum, e) => sum + e.rows, 0) <= FEW;
    const top = few
      ? await fewSteps(
          run,
          byEstimate.map((e) => e.t),
        )
      : await rankedSteps(run, byEstimate);
    return top.map(toHit);
  };
}
