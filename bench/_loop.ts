import pg from "pg";
import { readFileSync } from "node:fs";
import { postgresStorage } from "chat-gateway/storage/postgres";
const [schema, n] = process.argv.slice(2);
const st = postgresStorage({ connectionString: "postgres://postgres@127.0.0.1:5432/test", schema });
await st.open?.();
const c = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/test" });
await c.connect();
const two = JSON.parse(readFileSync("/work/notes/two.json", "utf8"));
const one = JSON.parse(readFileSync("/work/notes/one.json", "utf8"));
const cases: Array<[string, () => Promise<unknown>]> = [
  ["search two", () => st.search("bench", { query: "alpha quet", scope: "all", limit: 20 })],
  ["stmt two", () => c.query(two.text, two.values)],
  ["search one", () => st.search("bench", { query: "alpha", scope: "all", limit: 20 })],
  ["stmt one", () => c.query(one.text, one.values)],
];
const t = cases.map(() => [] as number[]);
for (let i = 0; i < 50; i++) for (const [, f] of cases) await f();
for (let i = 0; i < Number(n); i++)
  for (const [k, [, f]] of cases.entries()) {
    const a = performance.now();
    await f();
    t[k].push(performance.now() - a);
  }
for (const [k, [name]] of cases.entries()) {
  const s = t[k].sort((a, b) => a - b);
  console.log(name, "p50", s[s.length >> 1].toFixed(3), "p10", s[Math.floor(s.length / 10)].toFixed(3));
}
await c.end();
await st.close?.();
