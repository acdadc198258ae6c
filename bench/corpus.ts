/**
 * The generated history the storage benches fill: deterministic, so every run and every storage
 * stores the same text, plus the latency and disk helpers they share.
 * @module
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { StoredMessage } from "chat-gateway";

export const CHATS = 50;
const TEXT_CHARS = 300;
export const OWNER = "bench";
/** Ten messages in all carry it, whatever the size. */
export const RARE = "quetzal";
/** One message in five carries it. */
export const COMMON = "alpha";

/** Deterministic pseudo-random numbers, so every run stores the same text. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = rng(42);
const syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pa", "do", "gu", "ben", "tor", "lin", "mar"];
const vocabulary = Array.from({ length: 4000 }, () => {
  let w = "";
  for (let n = 2 + Math.floor(random() * 3); n > 0; n--) w += syllables[Math.floor(random() * syllables.length)];
  return w;
});

/** 300 characters of words; every fifth message has the common word, ten messages in all have the rare one. */
function text(i: number, total: number): string {
  const words: string[] = [];
  if (i % 5 === 0) words.push(COMMON);
  if (i % Math.max(1, Math.floor(total / 10)) === 7) words.push(RARE);
  let length = words.join(" ").length;
  while (length < TEXT_CHARS) {
    const w = vocabulary[Math.floor(random() * vocabulary.length)];
    words.push(w);
    length += w.length + 1;
  }
  return words.join(" ").slice(0, TEXT_CHARS);
}

export const id = (i: number) => `m${String(i).padStart(9, "0")}`;
const T0 = 1_700_000_000_000;

/** Message `i` of a history of `total`, in chat `chat<i % CHATS>`. */
export function message(i: number, total: number): StoredMessage {
  return {
    message_id: id(i),
    role: i % 2 ? "assistant" : "user",
    text: text(i, total),
    reasoning: "",
    ts: T0 + i,
    media: [],
    chat_id: `chat${i % CHATS}`,
    thread_id: null,
  };
}

export function percentiles(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
  return { p50: +at(50).toFixed(3), p99: +at(99).toFixed(3), max: +s[s.length - 1].toFixed(3), n: s.length };
}

/** Runs `fn` `n` times one after another; latency percentiles in ms. */
export async function timed(n: number, fn: (k: number) => Promise<unknown>) {
  const samples: number[] = [];
  for (let k = 0; k < n; k++) {
    const t = performance.now();
    await fn(k);
    samples.push(performance.now() - t);
  }
  return percentiles(samples);
}

/** The files of a folder and their sizes in bytes, by name. */
export async function filesOnDisk(dir: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const f of (await readdir(dir)).sort()) out[f] = (await stat(join(dir, f))).size;
  return out;
}

/** Bytes as MiB, to one decimal. */
export const mb = (bytes: number) => +(bytes / 1024 / 1024).toFixed(1);

type Row = Record<string, any>;

/** A Markdown table with a column per size (`rows`) and a line per label and cell. */
export function sizeTable(rows: Row[], lines: Array<[string, (r: Row) => string]>): string {
  return [
    `| | ${rows.map((r) => `${r.messages.toLocaleString("en")} messages`).join(" | ")} |`,
    `|---|${rows.map(() => "---").join("|")}|`,
    ...lines.map(([label, f]) => `| ${label} | ${rows.map(f).join(" | ")} |`),
  ].join("\n");
}

/** A latency cell: p50 / p99 of the row's field `k`. */
export const p50p99 = (k: string) => (r: Row) => `${r[k].p50} / ${r[k].p99}`;

/** A cell listing files and their sizes. */
export const filesCell = (files: Record<string, number>) =>
  Object.entries(files)
    .map(([f, size]) => `${f} ${mb(size)} MB`)
    .join(", ");
