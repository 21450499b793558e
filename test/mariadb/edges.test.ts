// The MariaDB recipe at its edges (docs/mariadb.md), one real MariaDB for the file, through mysql2 with
// and without CLIENT_FOUND_ROWS. Tokens are made here by hand: what is under test is the table's check,
// which sees only resource and generation.
import { expect } from "chai";
import { generateKeyPairSync, sign } from "node:crypto";
import mysql from "mysql2/promise";
import { canonicalToken, type Token, type TokenKey } from "../../client/index.js";
import { fenceColumnsDdl, fencedDelete, fencedInsert, fencedUpdate } from "../../client/mariadb.js";
import { startMariadb, type TestMariadb } from "../harness/mariadb.js";

const tok = (resource: string, generation: number | bigint): Token => ({ resource, generation: BigInt(generation), leaseId: 1n });

describe("MariaDB fencing at its edges", () => {
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

  it("an update applies at the fence's generation or a newer one, and the same holder may write twice (<=)", async () => {
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } })).to.deep.equal({ status: "applied", fence: 5n });
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 5n });
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 9), set: { body: "v3" } })).to.deep.equal({ status: "applied", fence: 9n });
    expect(await row("a")).to.deep.equal({ body: "v3", fence_resource: "r", fence_token: "9", fence_deleted: false });
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

  it("an older generation is told apart from a missing row: stale with the row's fence, or notFound", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "from-B" } });
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "stale" } })).to.deep.equal({ status: "stale", fence: 7n });
    expect(await fencedUpdate(db, { table, id: "missing", unverified: true, token: tok("r", 6), set: { body: "x" } })).to.deep.equal({ status: "notFound" });
    expect(await fencedDelete(db, { table, id: "missing", unverified: true, token: tok("r", 6) })).to.deep.equal({ status: "notFound" });
    expect((await row("a"))?.body).to.equal("from-B");
    const [[count]] = await db.query<mysql.RowDataPacket[]>(`SELECT count(*) AS n FROM ${table}`);
    expect(count.n).to.equal(1);
  });

  it("an insert never overwrites a live row: exists, or stale when a newer generation wrote it", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "first" } });
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "again" } })).to.deep.equal({ status: "exists", fence: 7n });
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "newer" } })).to.deep.equal({ status: "exists", fence: 7n });
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 3), set: { body: "older" } })).to.deep.equal({ status: "stale", fence: 7n });
    expect((await row("a"))?.body).to.equal("first");
  });

  it("insert racing insert: the second waits for the first to commit, then finds the row there", async () => {
    const first = await db.getConnection();
    try {
      await first.beginTransaction();
      expect(await fencedInsert(first, { table, id: "a", unverified: true, token: tok("r", 4), set: { body: "first" } })).to.deep.equal({ status: "applied", fence: 4n });
      // Uncommitted: the second insert blocks on the key until the first transaction ends.
      const second = fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "second" } });
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

  it("a delete leaves a tombstone, so a stale insert cannot resurrect the row; a newer one may", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "from-A" } });
    expect(await fencedDelete(db, { table, id: "a", unverified: true, token: tok("r", 7) })).to.deep.equal({ status: "applied", fence: 7n });
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "resurrected" } })).to.deep.equal({ status: "stale", fence: 7n });
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "x" } })).to.deep.equal({ status: "notFound" });
    expect(await fencedDelete(db, { table, id: "a", unverified: true, token: tok("r", 7) })).to.deep.equal({ status: "notFound" });
    expect(await row("a")).to.deep.equal({ body: "from-A", fence_resource: "r", fence_token: "7", fence_deleted: true });

    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "back" } })).to.deep.equal({ status: "applied", fence: 7n });
    expect(await row("a")).to.deep.equal({ body: "back", fence_resource: "r", fence_token: "7", fence_deleted: false });
  });

  it("generations of different resources are never compared, and resources are compared as bytes (not by MySQL's case- and space-blind collations)", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("orders", 5), set: { body: "order" } });
    for (const other of ["billing", "Orders", "orders ", "ORDERS"]) {
      for (const write of [
        () => fencedUpdate(db, { table, id: "a", unverified: true, token: tok(other, 1_000_000), set: { body: "x" } }),
        () => fencedInsert(db, { table, id: "a", unverified: true, token: tok(other, 1_000_000), set: { body: "x" } }),
        () => fencedDelete(db, { table, id: "a", unverified: true, token: tok(other, 1_000_000) }),
      ]) {
        expect(await write(), other).to.deep.equal({ status: "otherResource", resource: "orders" });
      }
    }
    expect(await row("a")).to.deep.equal({ body: "order", fence_resource: "orders", fence_token: "5", fence_deleted: false });
  });

  it("a legacy row (NULL fence) is claimed by the first fenced write, and fenced from then on", async () => {
    await db.query(`INSERT INTO ${table} (id, body) VALUES ('old', 'legacy')`);
    expect(await row("old")).to.deep.equal({ body: "legacy", fence_resource: null, fence_token: null, fence_deleted: false });
    expect(await fencedInsert(db, { table, id: "old", unverified: true, token: tok("r", 5), set: { body: "x" } })).to.deep.equal({ status: "exists", fence: null });
    expect(await fencedUpdate(db, { table, id: "old", unverified: true, token: tok("r", 5), set: { body: "claimed" } })).to.deep.equal({ status: "applied", fence: 5n });
    expect(await fencedUpdate(db, { table, id: "old", unverified: true, token: tok("r", 4), set: { body: "stale" } })).to.deep.equal({ status: "stale", fence: 5n });
    expect(await fencedUpdate(db, { table, id: "old", unverified: true, token: tok("other", 9), set: { body: "x" } })).to.deep.equal({ status: "otherResource", resource: "r" });
    expect((await row("old"))?.body).to.equal("claimed");
  });

  it("generations past 2^53 are compared exactly (no double, no JavaScript number on the way)", async () => {
    const big = 2n ** 53n + 1n;
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", big), set: { body: "v1" } })).to.deep.equal({ status: "applied", fence: big });
    // 2^53 and 2^53+1 are the same double: compared as doubles this stale write would pass.
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", big - 1n), set: { body: "stale" } })).to.deep.equal({ status: "stale", fence: big });
    expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: String(big), fence_deleted: false });
  });

  it("a fenced write is one statement of the caller's transaction: a rollback undoes it", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } });
    const c = await db.getConnection();
    try {
      await c.beginTransaction();
      expect(await fencedUpdate(c, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 8n });
      // A refused insert (the duplicate-key error) does not end the caller's transaction.
      expect(await fencedInsert(c, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "v3" } })).to.deep.equal({ status: "exists", fence: 8n });
      await c.rollback();
    } finally {
      c.release();
    }
    expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
  });

  it("with the server's keys given, a token whose signature does not verify writes nothing", async () => {
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    const keys: TokenKey[] = [{ keyId: "k1", publicKey: Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url") }];
    const signed = (t: Token): Token => ({ ...t, keyId: "k1", signature: sign(null, canonicalToken({ ...t, keyId: "k1" }), privateKey) });

    const good = signed(tok("r", 5));
    expect(await fencedInsert(db, { table, id: "a", token: good, keys, set: { body: "v1" } })).to.deep.equal({ status: "applied", fence: 5n });
    const forged = { ...good, generation: 1_000n };
    expect(await fencedUpdate(db, { table, id: "a", token: forged, keys, set: { body: "forged" } })).to.deep.equal({ status: "unverified", reason: "bad signature" });
    expect(await fencedDelete(db, { table, id: "a", token: tok("r", 9), keys })).to.deep.equal({ status: "unverified", reason: "not signed" });
    expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
  });

  it("without keys or unverified: true, a forged generation 2^63-1 is thrown out before any SQL runs", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } });
    const forged = tok("r", 2n ** 63n - 1n);
    const calls: [string, () => Promise<unknown>][] = [
      ["update", () => fencedUpdate(db, { table, id: "a", token: forged, set: { body: "poison" } } as never)],
      ["insert", () => fencedInsert(db, { table, id: "b", token: forged, set: { body: "poison" } } as never)],
      ["delete", () => fencedDelete(db, { table, id: "a", token: forged } as never)],
    ];
    for (const [what, call] of calls) {
      const thrown = await call().then(() => undefined, (e: unknown) => e);
      expect(thrown, what).to.be.instanceOf(TypeError);
      expect(String(thrown)).to.include("keys").and.include("unverified: true");
    }
    expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
    expect(await row("b")).to.equal(undefined);
  });

  it("refuses to let a caller set a fence column, and quotes names as given", async () => {
    let thrown: unknown;
    await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { fence_token: 99 } }).catch((e) => (thrown = e));
    expect(thrown).to.be.instanceOf(RangeError);

    await db.query("CREATE TABLE `Odd ``Name``` (`Key` VARCHAR(10) PRIMARY KEY, `my col` TEXT)");
    await db.query(fenceColumnsDdl("Odd `Name`"));
    const odd = { table: [server.database, "Odd `Name`"] as const, idColumn: "Key", id: "k" };
    expect(await fencedInsert(db, { ...odd, unverified: true, token: tok("r", 2), set: { "my col": "v" } })).to.deep.equal({ status: "applied", fence: 2n });
    expect(await fencedUpdate(db, { ...odd, unverified: true, token: tok("r", 1), set: { "my col": "w" } })).to.deep.equal({ status: "stale", fence: 2n });
  });

  it("a duplicate in another unique key is the driver's error, not an outcome", async () => {
    await db.query(`ALTER TABLE ${table} ADD COLUMN email VARCHAR(64) UNIQUE`);
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1", email: "x@example.com" } });
    const thrown = await fencedInsert(db, { table, id: "b", unverified: true, token: tok("r", 5), set: { body: "v2", email: "x@example.com" } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((thrown as { code?: string }).code).to.equal("ER_DUP_ENTRY");
    expect(await row("b")).to.equal(undefined);
  });
});
