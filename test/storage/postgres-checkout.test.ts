// A connection of the PostgreSQL storage's pool that breaks while a transaction holds it (the
// database restarting, a network cut) fails that transaction only: no unhandled `error` ends the
// process, and the pool hands the broken connection to no one after.
import { afterAll, describe, expect, test } from "vitest";
import { database } from "../../adapters/storage/postgres/database.js";
import { DATABASE_URL, dropSchema, postgresAvailable, runId } from "../fixtures/services.js";
import { startPgProxy } from "../multiprocess/pg-proxy.js";

const available = await postgresAvailable("postgres checkout");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!available)("postgres - a connection that breaks while checked out", () => {
  const schema = `t_${runId()}`;
  afterAll(() => dropSchema(schema));

  test("postgres - the connection cut between two queries of a transaction fails it, and the next query gets a live connection", async () => {
    const proxy = await startPgProxy(DATABASE_URL);
    const db = database({ pool: undefined, connectionString: proxy.url, poolSize: 1, schema });
    // What would end a gateway process: an `error` event with no listener, thrown from the socket.
    const uncaught: Error[] = [];
    const onUncaught = (error: Error) => uncaught.push(error);
    process.prependListener("uncaughtException", onUncaught);
    try {
      await db.ready();
      const failed = db.transaction(async (client) => {
        await client.query("SELECT 1");
        // Broken while no query runs on it: the client reports it as an `error` event.
        proxy.cut();
        await sleep(300);
        proxy.restore();
        await client.query("SELECT 1");
      });
      await expect(failed).rejects.toThrow();
      expect(uncaught.map((e) => e.message)).toEqual([]);
      // A pool of one: this query would get the broken connection if it had gone back as good.
      expect(await db.rows<{ n: number }>("SELECT 1 AS n", [])).toEqual([{ n: 1 }]);
    } finally {
      process.off("uncaughtException", onUncaught);
      await db.close();
      await proxy.close();
    }
  });
});
