// The invariants of issue 47 item 14, checked after every fault test of several processes on
// PostgreSQL (read directly, not through a gateway) and on the devices' recorded frames: every
// acknowledged message stored once with exactly one final answer, none streaming or waiting, no
// frame of an answer after its final, no seq twice, one answer streaming per lane at any time.
import { expect } from "vitest";
import type { Client, Frame } from "../gateway/harness.js";
import type { Cluster } from "./cluster.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a query on the cluster's schema needs: a cluster, or anything with its `query`. */
export type Queryable = Pick<Cluster, "query">;

export interface Row {
  message_id: string;
  role: string;
  status: string | null;
  reply_to: string | null;
  client_msg_id: string | null;
}

export async function rows(c: Queryable): Promise<Row[]> {
  return (await c.query(
    `SELECT message_id, role, status, client_msg_id, data::json ->> 'reply_to' AS reply_to
       FROM messages ORDER BY ts, message_id`,
  )) as Row[];
}

/** Polls until nothing streams or waits and every user message has an ended answer. */
export async function settled(c: Queryable, ms = 60_000): Promise<Row[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const all = await rows(c);
    const answered = new Set(
      all.filter((r) => r.role === "assistant" && r.status !== "streaming").map((r) => r.reply_to),
    );
    const open = all.filter((r) => r.status === "streaming" || r.status === "waiting");
    const unanswered = all.filter((r) => r.role === "user" && !answered.has(r.message_id));
    if (open.length === 0 && unanswered.length === 0) return all;
    if (Date.now() > deadline)
      throw new Error(`not settled: open ${JSON.stringify(open)}, unanswered ${JSON.stringify(unanswered)}`);
    await sleep(250);
  }
}

/**
 * The storage side: each client_msg_id stored once, one answer per user message, one stored final
 * frame per answer (`message.stop`, the example server streams), none left streaming.
 */
export async function expectStoredOnce(c: Queryable, all: Row[], acknowledged: readonly string[] = []): Promise<void> {
  const users = all.filter((r) => r.role === "user");
  for (const id of acknowledged)
    expect(
      users.filter((u) => u.client_msg_id === id),
      `stored messages of ${id}`,
    ).toHaveLength(1);
  const answers = all.filter((r) => r.role === "assistant");
  const byReply = new Map<string, number>();
  for (const a of answers) byReply.set(a.reply_to ?? "", (byReply.get(a.reply_to ?? "") ?? 0) + 1);
  for (const user of users) expect(byReply.get(user.message_id), `answers to ${user.message_id}`).toBe(1);
  expect(all.filter((r) => r.status === "streaming" || r.status === "waiting")).toEqual([]);
  const finals = (await c.query(
    "SELECT payload::json ->> 'message_id' AS id, count(*)::int AS n FROM outbox WHERE type = 'message.stop' GROUP BY 1",
  )) as Array<{ id: string; n: number }>;
  const count = new Map(finals.map((f) => [f.id, f.n]));
  for (const answer of answers) expect(count.get(answer.message_id), `finals of ${answer.message_id}`).toBe(1);
}

/** The device side: no seq twice, no frame of an answer after its final. */
export function expectDeviceWhole(device: Pick<Client, "frames">): void {
  const seqs = device.frames.filter((f: Frame) => typeof f.seq === "number").map((f: Frame) => f.seq);
  expect(new Set(seqs).size, "distinct seqs").toBe(seqs.length);
  const ended = new Set<string>();
  for (const f of device.frames as Frame[]) {
    const id = f.payload?.message_id;
    // A request's answer that names the answer (`turn.stopped`) is no frame of the answer.
    if (typeof id !== "string" || f.id !== undefined || f.type === "turn.stopped") continue;
    expect(ended.has(id) && f.type !== "message.deleted", `${f.type} of ${id} after its final`).toBe(false);
    if (f.type === "message.stop") ended.add(id);
  }
}

/**
 * Samples, until stopped, how many answers stream at once in each lane (straight from
 * PostgreSQL): `stop()` resolves with the most seen in any lane. A sample that fails (the database
 * is down in an outage test) is skipped.
 */
export function watchStreaming(c: Queryable, everyMs = 150): { stop(): Promise<number> } {
  let most = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const lanes = (await c.query(
          `SELECT count(*)::int AS n FROM messages WHERE status = 'streaming' GROUP BY owner, chat_id, thread_key`,
        )) as Array<{ n: number }>;
        for (const { n } of lanes) most = Math.max(most, n);
      } catch {
        // Unreachable for a moment: the next sample tries again.
      }
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return most;
    },
  };
}
