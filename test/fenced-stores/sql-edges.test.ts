// The SQL recipes at their shared edges (docs/postgres.md, docs/mariadb.md): one suite, run on a real
// PostgreSQL and a real MariaDB, each a dialect below (how to start it, read a row back, open a transaction,
// quote a name). Tokens are made here by hand: what is under test is the table's check, which sees only
// resource and generation. What only MariaDB has (CLIENT_FOUND_ROWS, REPEATABLE READ snapshots, why not
// ON DUPLICATE KEY UPDATE) is in test/mariadb/edges.test.ts.
import { expect } from "chai";
import { generateKeyPairSync, sign } from "node:crypto";
import mysql from "mysql2/promise";
import pg from "pg";
import { canonicalToken, type FencedOutcome, type Token, type TokenKey } from "../../client/index.js";
import * as mariadb from "../../client/mariadb.js";
import * as postgres from "../../client/postgres.js";
import { startMariadb } from "../harness/mariadb.js";
import { startPostgres } from "../harness/postgres.js";

const tok = (resource: string, generation: number | bigint): Token => ({ resource, generation: BigInt(generation), leaseId: 1n });

type Table = string | readonly [string, string];
type Write = { table: Table; id: string; token: Token; set?: Record<string, unknown>; unverified?: true; keys?: TokenKey[]; idColumn?: string };
type Row = { body: string; fence_resource: string | null; fence_token: string | null; fence_deleted: boolean };

/** A connection or pool, as the dialect's helpers take it. */
interface Sql<C> {
  readonly db: C;
  insert(c: C, w: Write): Promise<FencedOutcome>;
  update(c: C, w: Write): Promise<FencedOutcome>;
  delete(c: C, w: Write): Promise<FencedOutcome>;
  fenceColumnsDdl(table: Table): string;
  run(sql: string): Promise<void>;
  row(table: string, id: string): Promise<Row | undefined>;
  /** A connection of its own in a transaction. */
  begin(): Promise<{ c: C; commit(): Promise<void>; rollback(): Promise<void>; release(): void }>;
  /** `CREATE TABLE` of a table and columns whose names need quoting, and its name as the helpers take it. */
  odd: { ddl: string; table: readonly [string, string] };
  /** The driver's code for a duplicate in a unique key. */
  duplicateCode: string;
  destroy(): Promise<void>;
}

interface Dialect {
  title: string;
  start(): Promise<Sql<unknown>>;
}

const DIALECTS: Dialect[] = [
  {
    title: "PostgreSQL",
    async start() {
      const server = await startPostgres();
      const db = new pg.Pool({ connectionString: server.url, max: 4 });
      const sql: Sql<pg.Pool | pg.PoolClient> = {
        db,
        insert: (c, w) => postgres.fencedInsert(c, w as postgres.FencedWrite),
        update: (c, w) => postgres.fencedUpdate(c, w as postgres.FencedWrite),
        delete: (c, w) => postgres.fencedDelete(c, w as postgres.FencedTarget),
        fenceColumnsDdl: (t) => postgres.fenceColumnsDdl(t as postgres.FencedTarget["table"]),
        run: async (s) => void (await db.query(s)),
        row: async (table, id) => (await db.query(`SELECT body, fence_resource, fence_token, fence_deleted FROM ${table} WHERE id = $1`, [id])).rows[0],
        async begin() {
          const c = await db.connect();
          await c.query("BEGIN");
          return { c, commit: async () => void (await c.query("COMMIT")), rollback: async () => void (await c.query("ROLLBACK")), release: () => c.release() };
        },
        odd: { ddl: `CREATE TABLE "Odd ""Name""" ("Key" text PRIMARY KEY, "my col" text)`, table: ["public", 'Odd "Name"'] },
        duplicateCode: "23505",
        async destroy() {
          await db.end();
          await server.destroy();
        },
      };
      return sql as Sql<unknown>;
    },
  },
  {
    title: "MariaDB",
    async start() {
      const server = await startMariadb();
      const db = mysql.createPool({ ...server.options, connectionLimit: 4 });
      const sql: Sql<mysql.Pool | mysql.PoolConnection> = {
        db,
        insert: (c, w) => mariadb.fencedInsert(c, w as mariadb.FencedWrite),
        update: (c, w) => mariadb.fencedUpdate(c, w as mariadb.FencedWrite),
        delete: (c, w) => mariadb.fencedDelete(c, w as mariadb.FencedTarget),
        fenceColumnsDdl: (t) => mariadb.fenceColumnsDdl(t as mariadb.FencedTarget["table"]),
        run: async (s) => void (await db.query(s)),
        async row(table, id) {
          const [rows] = await db.query<mysql.RowDataPacket[]>(
            `SELECT body, CAST(fence_resource AS CHAR) AS fence_resource, CAST(fence_token AS CHAR) AS fence_token, fence_deleted FROM ${table} WHERE id = ?`,
            [id],
          );
          return rows[0] && ({ ...rows[0], fence_deleted: Boolean(rows[0].fence_deleted) } as Row);
        },
        async begin() {
          const c = await db.getConnection();
          await c.beginTransaction();
          return { c, commit: () => c.commit(), rollback: () => c.rollback(), release: () => c.release() };
        },
        odd: { ddl: "CREATE TABLE `Odd ``Name``` (`Key` VARCHAR(10) PRIMARY KEY, `my col` TEXT)", table: [server.database, "Odd `Name`"] },
        duplicateCode: "ER_DUP_ENTRY",
        async destroy() {
          await db.end();
          await server.destroy();
        },
      };
      return sql as Sql<unknown>;
    },
  },
];

for (const dialect of DIALECTS) {
  describe(`${dialect.title} fencing at its edges`, () => {
    let sql: Sql<unknown>;
    let db: unknown;
    let n = 0;
    let table: string;
    const row = (id: string) => sql.row(table, id);

    before(async function () {
      this.timeout(60_000);
      sql = await dialect.start();
      db = sql.db;
    });
    after(async function () {
      this.timeout(30_000);
      await sql?.destroy();
    });
    beforeEach(async () => {
      table = `docs_${++n}`;
      await sql.run(`CREATE TABLE ${table} (id VARCHAR(64) PRIMARY KEY, body TEXT NOT NULL DEFAULT '')`);
      await sql.run(sql.fenceColumnsDdl(table));
    });

    it("an update applies at the fence's generation or a newer one, and the same holder may write twice (<=)", async () => {
      expect(await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await sql.update(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await sql.update(db, { table, id: "a", unverified: true, token: tok("r", 9), set: { body: "v3" } })).to.deep.equal({ status: "applied", fence: 9n });
      expect(await row("a")).to.deep.equal({ body: "v3", fence_resource: "r", fence_token: "9", fence_deleted: false });
    });

    it("an older generation is told apart from a missing row: stale with the row's fence, or notFound", async () => {
      await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "from-B" } });
      expect(await sql.update(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "stale" } })).to.deep.equal({ status: "stale", fence: 7n });
      expect(await sql.update(db, { table, id: "missing", unverified: true, token: tok("r", 6), set: { body: "x" } })).to.deep.equal({ status: "notFound" });
      expect(await sql.delete(db, { table, id: "missing", unverified: true, token: tok("r", 6) })).to.deep.equal({ status: "notFound" });
      expect((await row("a"))?.body).to.equal("from-B");
      expect(await row("missing")).to.equal(undefined);
    });

    it("an insert never overwrites a live row: exists, or stale when a newer generation wrote it", async () => {
      await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "first" } });
      expect(await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "again" } })).to.deep.equal({ status: "exists", fence: 7n });
      expect(await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "newer" } })).to.deep.equal({ status: "exists", fence: 7n });
      expect(await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 3), set: { body: "older" } })).to.deep.equal({ status: "stale", fence: 7n });
      expect((await row("a"))?.body).to.equal("first");
    });

    it("insert racing insert: the second waits for the first to commit, then finds the row there", async () => {
      const first = await sql.begin();
      try {
        expect(await sql.insert(first.c, { table, id: "a", unverified: true, token: tok("r", 4), set: { body: "first" } })).to.deep.equal({ status: "applied", fence: 4n });
        // Uncommitted: the second insert blocks on the key until the first transaction ends.
        const second = sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "second" } });
        let settled = false;
        void second.finally(() => (settled = true));
        await new Promise((r) => setTimeout(r, 300));
        expect(settled).to.equal(false);
        await first.commit();
        expect(await second).to.deep.equal({ status: "exists", fence: 4n });
      } finally {
        first.release();
      }
      expect((await row("a"))?.body).to.equal("first");
    });

    it("a delete leaves a tombstone, so a stale insert cannot resurrect the row; a newer one may", async () => {
      await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "from-A" } });
      expect(await sql.delete(db, { table, id: "a", unverified: true, token: tok("r", 7) })).to.deep.equal({ status: "applied", fence: 7n });
      expect(await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "resurrected" } })).to.deep.equal({ status: "stale", fence: 7n });
      expect(await sql.update(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "x" } })).to.deep.equal({ status: "notFound" });
      expect(await sql.delete(db, { table, id: "a", unverified: true, token: tok("r", 7) })).to.deep.equal({ status: "notFound" });
      expect(await row("a")).to.deep.equal({ body: "from-A", fence_resource: "r", fence_token: "7", fence_deleted: true });

      expect(await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "back" } })).to.deep.equal({ status: "applied", fence: 7n });
      expect(await row("a")).to.deep.equal({ body: "back", fence_resource: "r", fence_token: "7", fence_deleted: false });
    });

    it("generations of different resources are never compared, and resources are compared as bytes (never case- or space-blind)", async () => {
      await sql.insert(db, { table, id: "a", unverified: true, token: tok("orders", 5), set: { body: "order" } });
      for (const other of ["billing", "Orders", "orders ", "ORDERS"]) {
        const token = tok(other, 1_000_000);
        for (const write of [
          () => sql.update(db, { table, id: "a", unverified: true, token, set: { body: "x" } }),
          () => sql.insert(db, { table, id: "a", unverified: true, token, set: { body: "x" } }),
          () => sql.delete(db, { table, id: "a", unverified: true, token }),
        ]) {
          expect(await write(), other).to.deep.equal({ status: "otherResource", resource: "orders" });
        }
      }
      expect(await row("a")).to.deep.equal({ body: "order", fence_resource: "orders", fence_token: "5", fence_deleted: false });
    });

    it("a legacy row (NULL fence) is claimed by the first fenced write, and fenced from then on", async () => {
      await sql.run(`INSERT INTO ${table} (id, body) VALUES ('old', 'legacy')`);
      expect(await row("old")).to.deep.equal({ body: "legacy", fence_resource: null, fence_token: null, fence_deleted: false });
      expect(await sql.insert(db, { table, id: "old", unverified: true, token: tok("r", 5), set: { body: "x" } })).to.deep.equal({ status: "exists", fence: null });
      expect(await sql.update(db, { table, id: "old", unverified: true, token: tok("r", 5), set: { body: "claimed" } })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await sql.update(db, { table, id: "old", unverified: true, token: tok("r", 4), set: { body: "stale" } })).to.deep.equal({ status: "stale", fence: 5n });
      expect(await sql.update(db, { table, id: "old", unverified: true, token: tok("other", 9), set: { body: "x" } })).to.deep.equal({ status: "otherResource", resource: "r" });
      expect((await row("old"))?.body).to.equal("claimed");
    });

    it("generations past 2^53 are compared exactly (no double, no JavaScript number on the way)", async () => {
      const big = 2n ** 53n + 1n;
      expect(await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", big), set: { body: "v1" } })).to.deep.equal({ status: "applied", fence: big });
      // 2^53 and 2^53+1 are the same double: compared as doubles this stale write would pass.
      expect(await sql.update(db, { table, id: "a", unverified: true, token: tok("r", big - 1n), set: { body: "stale" } })).to.deep.equal({ status: "stale", fence: big });
      expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: String(big), fence_deleted: false });
    });

    it("a fenced write is one statement of the caller's transaction: a refused insert does not end it, and a rollback undoes it", async () => {
      await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } });
      const tx = await sql.begin();
      try {
        expect(await sql.update(tx.c, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 8n });
        expect(await sql.insert(tx.c, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "v3" } })).to.deep.equal({ status: "exists", fence: 8n });
        // Still the caller's transaction, still open: its own write is there to read.
        expect(await sql.update(tx.c, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "v4" } })).to.deep.equal({ status: "applied", fence: 8n });
        await tx.rollback();
      } finally {
        tx.release();
      }
      expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
    });

    it("with the server's keys given, a token whose signature does not verify writes nothing", async () => {
      const { publicKey, privateKey } = generateKeyPairSync("ed25519");
      const keys: TokenKey[] = [{ keyId: "k1", publicKey: Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url") }];
      const signed = (t: Token): Token => ({ ...t, keyId: "k1", signature: sign(null, canonicalToken({ ...t, keyId: "k1" }), privateKey) });

      const good = signed(tok("r", 5));
      expect(await sql.insert(db, { table, id: "a", token: good, keys, set: { body: "v1" } })).to.deep.equal({ status: "applied", fence: 5n });
      // A generation raised by hand keeps the old signature, which no longer covers it.
      const forged = { ...good, generation: 1_000n };
      expect(await sql.update(db, { table, id: "a", token: forged, keys, set: { body: "forged" } })).to.deep.equal({ status: "unverified", reason: "bad signature" });
      expect(await sql.delete(db, { table, id: "a", token: tok("r", 9), keys })).to.deep.equal({ status: "unverified", reason: "not signed" });
      expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
    });

    it("without keys or unverified: true, a forged generation 2^63-1 is thrown out before any SQL runs, and the row's real holder writes on", async () => {
      await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } });
      const forged = tok("r", 2n ** 63n - 1n);
      const calls: [string, () => Promise<unknown>][] = [
        ["update", () => sql.update(db, { table, id: "a", token: forged, set: { body: "poison" } })],
        ["insert", () => sql.insert(db, { table, id: "b", token: forged, set: { body: "poison" } })],
        ["delete", () => sql.delete(db, { table, id: "a", token: forged })],
      ];
      for (const [what, call] of calls) {
        const thrown = await call().then(() => undefined, (e: unknown) => e);
        expect(thrown, what).to.be.instanceOf(TypeError);
        expect(String(thrown)).to.include("keys").and.include("unverified: true");
      }
      // Before the check: the fence became 9223372036854775807 and every real generation after it was "stale".
      expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
      expect(await row("b")).to.equal(undefined);
      expect(await sql.update(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 6n });
    });

    it("refuses to let a caller set a fence column, and quotes names as given", async () => {
      let thrown: unknown;
      await sql.update(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { fence_token: 99 } }).catch((e) => (thrown = e));
      expect(thrown).to.be.instanceOf(RangeError);

      await sql.run(sql.odd.ddl);
      await sql.run(sql.fenceColumnsDdl(sql.odd.table[1]));
      const odd = { table: sql.odd.table, idColumn: "Key", id: "k" };
      expect(await sql.insert(db, { ...odd, unverified: true, token: tok("r", 2), set: { "my col": "v" } })).to.deep.equal({ status: "applied", fence: 2n });
      expect(await sql.update(db, { ...odd, unverified: true, token: tok("r", 1), set: { "my col": "w" } })).to.deep.equal({ status: "stale", fence: 2n });
    });

    it("a duplicate in another unique key is the driver's error, not an outcome", async () => {
      await sql.run(`ALTER TABLE ${table} ADD COLUMN email VARCHAR(64) UNIQUE`);
      await sql.insert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1", email: "x@example.com" } });
      const thrown = await sql.insert(db, { table, id: "b", unverified: true, token: tok("r", 5), set: { body: "v2", email: "x@example.com" } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((thrown as { code?: string }).code).to.equal(sql.duplicateCode);
      expect(await row("b")).to.equal(undefined);
    });
  });
}
