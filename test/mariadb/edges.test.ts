// The MariaDB recipe at the edges only MariaDB has (docs/mariadb.md), one real MariaDB for the file, through
// mysql2 with and without CLIENT_FOUND_ROWS. The edges every SQL recipe shares run on MariaDB and
// PostgreSQL alike in test/fenced-stores/sql-edges.test.ts. Tokens are made here by hand: what is under
// test is the table's check, which sees only resource and generation.
import { expect } from "chai";
import mysql from "mysql2/promise";
import type { Token } from "../../client/index.js";
import { fenceColumnsDdl, fencedDelete, fencedInsert, fencedUpdate } from "../../client/mariadb.js";
import { startMariadb, type TestMariadb } from "../harness/mariadb.js";

const tok = (resource: string, generation: number | bigint): Token => ({ resource, generation: BigInt(generation), leaseId: 1n });

describe("MariaDB fencing at its own edges", () => {
  let server: TestMariadb;
  let db: mysql.Pool; // mysql2's default flags: CLIENT_FOUND_ROWS on
  let changedOnly: mysql.Pool; // CLIENT_FOUND_ROWS off: affected rows count changed rows only
  let n = 0;
  let table: string;
  type Row = { body: string; fence_resource: string | null; fence_token: string | null; fence_deleted: boolean };
  const row = async (id: string): Promise<Row | undefined> => {
    const [rows] = await db.query<mysql.RowDataPacket[]>(
      `SELECT body, CAST(fence_resource AS CHAR) AS fence_resource, CAST(fence_token AS CHAR) AS fence_token, fence_deleted FROM ${table} WHERE id = ?`,
      [id],
    );
    return rows[0] && ({ ...rows[0], fence_deleted: Boolean(rows[0].fence_deleted) } as Row);
  };

  before(async function () {
    this.timeout(60_000);
    server = await startMariadb();
    db = mysql.createPool({ ...server.options, connectionLimit: 4 });
    changedOnly = mysql.createPool({ ...server.options, connectionLimit: 2, flags: ["-FOUND_ROWS"] });
  });
  after(async function () {
    this.timeout(30_000);
    await db?.end();
    await changedOnly?.end();
    await server?.destroy();
  });
  beforeEach(async () => {
    table = `docs_${++n}`;
    await db.query(`CREATE TABLE ${table} (id VARCHAR(64) PRIMARY KEY, body TEXT NOT NULL DEFAULT '')`);
    await db.query(fenceColumnsDdl(table));
  });

  for (const [mode, pool] of [["with CLIENT_FOUND_ROWS", () => db], ["without CLIENT_FOUND_ROWS", () => changedOnly]] as const) {
    it(`${mode}: a write of the same values by the same generation reads as applied, a stale one as stale`, async () => {
      const c = pool();
      expect(await fencedInsert(c, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "same" } })).to.deep.equal({ status: "applied", fence: 5n });
      // Nothing changes: 0 affected rows without the flag, 1 with it.
      expect(await fencedUpdate(c, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "same" } })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedUpdate(c, { table, id: "a", unverified: true, token: tok("r", 4), set: { body: "same" } })).to.deep.equal({ status: "stale", fence: 5n });
      expect(await fencedDelete(c, { table, id: "a", unverified: true, token: tok("r", 5) })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedInsert(c, { table, id: "a", unverified: true, token: tok("r", 4), set: { body: "same" } })).to.deep.equal({ status: "stale", fence: 5n });
      expect(await fencedInsert(c, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "same" } })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedInsert(c, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "same" } })).to.deep.equal({ status: "exists", fence: 5n });
      expect(await row("a")).to.deep.equal({ body: "same", fence_resource: "r", fence_token: "5", fence_deleted: false });
    });
  }

  it("why inserts are not ON DUPLICATE KEY UPDATE: with CLIENT_FOUND_ROWS a row the fence kept counts 1, as an inserted one does", async () => {
    const odku = `INSERT INTO ${table} (id, body, fence_resource, fence_token) VALUES (?, ?, 'r', ?)
      ON DUPLICATE KEY UPDATE body = IF(fence_token <= VALUES(fence_token), VALUES(body), body), fence_token = GREATEST(fence_token, VALUES(fence_token))`;
    const count = async (c: mysql.Pool, id: string, gen: number) => ((await c.execute<mysql.ResultSetHeader>(odku, [id, "x", gen]))[0]).affectedRows;
    expect([await count(db, "a", 5), await count(db, "a", 4), await count(db, "a", 6)]).to.deep.equal([1, 1, 2]); // inserted, refused, updated
    expect([await count(changedOnly, "b", 5), await count(changedOnly, "b", 4), await count(changedOnly, "b", 6)]).to.deep.equal([1, 0, 2]);
  });

  it("inside a REPEATABLE READ transaction, a refusal is explained from the newest row, not the transaction's snapshot", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v5" } });
    const tx = await db.getConnection();
    try {
      await tx.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      await tx.beginTransaction();
      await tx.query(`SELECT * FROM ${table}`); // the snapshot: fence 5
      expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "v8" } })).to.deep.equal({ status: "applied", fence: 8n });
      // The UPDATE sees fence 8 (InnoDB writes read the newest version); a plain SELECT would see 5 and
      // take the row for writable.
      expect(await fencedUpdate(tx, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "v6" } })).to.deep.equal({ status: "stale", fence: 8n });
      await tx.commit();
    } finally {
      tx.release();
    }
    expect((await row("a"))?.body).to.equal("v8");
  });

});
