// A picker id is looked up through an index (issue: reads bounded, docs/PROTOCOL.md §5): the
// outbox page of picker frames is planned on the (owner, type, seq) index in sql.js and PostgreSQL,
// never as a walk of the owner's outbox from a seq the client chose.
import initSqlJs from "sql.js";
import pg from "pg";
import { describe, expect, test } from "vitest";
import { postgresStorage } from "chat-gateway/storage/postgres";
import { MIGRATIONS } from "../../adapters/storage/sqljs/schema.js";
import { outboxPageSql } from "../../adapters/storage/sqljs/queries.js";
import { Sql } from "../../adapters/storage/sqljs/sql.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";

const PICKERS = ["picker.approval", "picker.confirm", "picker.model", "picker.resolved"];
const pgUp = await postgresAvailable("picker index");

describe("picker lookups through an index", () => {
  test("sql.js - the picker page reads the outbox_by_type index", async () => {
    const SQL = await initSqlJs();
    const db = new SQL.Database();
    const sql = new Sql(db);
    for (const step of MIGRATIONS) {
      if (typeof step === "string") db.exec(step);
      else step(sql);
    }
    const plan = db
      .exec(`EXPLAIN QUERY PLAN ${outboxPageSql(PICKERS)}`, ["alice", 0, ...PICKERS, 500])[0]!
      .values.map((r) => String(r[3]))
      .join("\n");
    expect(plan).toMatch(/outbox_by_type/);
    db.close();
  });

  test.skipIf(!pgUp)(
    "postgres - the picker page reads the outbox_type index, also over many frames of other types",
    async () => {
      const schema = `t_${runId()}`;
      const storage = postgresStorage({ connectionString: DATABASE_URL, schema, poolSize: 2 });
      await storage.open();
      try {
        const frames = Array.from({ length: 2000 }, (_, i) => ({
          type: "message",
          payload: { message_id: `m${i}`, text: "x".repeat(200) },
        }));
        for (let i = 0; i < 10; i++) await storage.commit("alice", { outbox: frames.slice(i * 200, i * 200 + 200) });
        await storage.commit("alice", {
          outbox: [{ type: "picker.approval", payload: { picker_id: "pk1_aaaaaaaaaaaa", message_id: "m1" } }],
        });
        const client = new pg.Client({ connectionString: DATABASE_URL });
        await client.connect();
        try {
          await client.query(`SET search_path TO "${schema}"`);
          await client.query("ANALYZE outbox");
          const { rows } = await client.query(
            "EXPLAIN SELECT seq FROM outbox WHERE owner = $1 AND seq > $2 AND type = ANY($3::text[]) ORDER BY seq LIMIT 500",
            ["alice", 0, PICKERS],
          );
          expect(rows.map((r) => r["QUERY PLAN"]).join("\n")).toMatch(/outbox_type/);
        } finally {
          await client.end();
        }
        const found = await storage.readOutbox("alice", 0, 500, PICKERS);
        expect(found.map((f) => f.type)).toEqual(["picker.approval"]);
      } finally {
        await storage.close();
        await dropSchema(schema);
      }
    },
  );
});
