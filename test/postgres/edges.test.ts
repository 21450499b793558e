// The PostgreSQL recipe at its edges (docs/postgres.md), one real PostgreSQL for the file. Tokens are made
// here by hand: what is under test is the table's check, which sees only resource and generation.
import { expect } from "chai";
import { generateKeyPairSync, sign } from "node:crypto";
import pg from "pg";
import { canonicalToken, fenceColumnsDdl, fencedDelete, fencedInsert, fencedUpdate, type Token, type TokenKey } from "../../client/index.js";
import { startPostgres, type TestPostgres } from "../harness/postgres.js";

const tok = (resource: string, generation: number | bigint): Token => ({ resource, generation: BigInt(generation), leaseId: 1n });

describe("PostgreSQL fencing at its edges", () => {
  let postgres: TestPostgres;
  let db: pg.Pool;
  let n = 0;
  let table: string;
  const row = async (id: string) =>
    (await db.query(`SELECT body, fence_resource, fence_token, fence_deleted FROM ${table} WHERE id = $1`, [id])).rows[0];

  before(async function () {
    this.timeout(60_000);
    postgres = await startPostgres();
    db = new pg.Pool({ connectionString: postgres.url, max: 4 });
  });
  after(async function () {
    this.timeout(30_000);
    await db?.end();
    await postgres?.destroy();
  });
  beforeEach(async () => {
    table = `docs_${++n}`;
    await db.query(`CREATE TABLE ${table} (id text PRIMARY KEY, body text NOT NULL DEFAULT '')`);
    await db.query(fenceColumnsDdl(table));
  });

  it("an update applies at the fence's generation or a newer one, and the same holder may write twice (<=)", async () => {
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } })).to.deep.equal({ status: "applied", fence: 5n });
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 5n });
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 9), set: { body: "v3" } })).to.deep.equal({ status: "applied", fence: 9n });
    expect(await row("a")).to.deep.equal({ body: "v3", fence_resource: "r", fence_token: "9", fence_deleted: false });
  });

  it("an older generation is told apart from a missing row: stale with the row's fence, or notFound", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "from-B" } });
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "stale" } })).to.deep.equal({ status: "stale", fence: 7n });
    expect(await fencedUpdate(db, { table, id: "missing", unverified: true, token: tok("r", 6), set: { body: "x" } })).to.deep.equal({ status: "notFound" });
    expect(await fencedDelete(db, { table, id: "missing", unverified: true, token: tok("r", 6) })).to.deep.equal({ status: "notFound" });
    expect((await row("a")).body).to.equal("from-B");
    expect((await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).to.equal(1);
  });

  it("an insert never overwrites a live row: exists, or stale when a newer generation wrote it", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "first" } });
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 7), set: { body: "again" } })).to.deep.equal({ status: "exists", fence: 7n });
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "newer" } })).to.deep.equal({ status: "exists", fence: 7n });
    expect(await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 3), set: { body: "older" } })).to.deep.equal({ status: "stale", fence: 7n });
    expect((await row("a")).body).to.equal("first");
  });

  it("insert racing insert: the second waits for the first to commit, then finds the row there", async () => {
    const first = await db.connect();
    try {
      await first.query("BEGIN");
      expect(await fencedInsert(first, { table, id: "a", unverified: true, token: tok("r", 4), set: { body: "first" } })).to.deep.equal({ status: "applied", fence: 4n });
      // Uncommitted: the second insert blocks on the key until the first transaction ends.
      const second = fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "second" } });
      let settled = false;
      void second.finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).to.equal(false);
      await first.query("COMMIT");
      expect(await second).to.deep.equal({ status: "exists", fence: 4n });
    } finally {
      first.release();
    }
    expect((await row("a")).body).to.equal("first");
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

  it("generations of different resources are never compared: another resource's row is refused whatever the number", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("orders", 5), set: { body: "order" } });
    for (const write of [
      () => fencedUpdate(db, { table, id: "a", unverified: true, token: tok("billing", 1_000_000), set: { body: "x" } }),
      () => fencedInsert(db, { table, id: "a", unverified: true, token: tok("billing", 1_000_000), set: { body: "x" } }),
      () => fencedDelete(db, { table, id: "a", unverified: true, token: tok("billing", 1_000_000) }),
    ]) {
      expect(await write()).to.deep.equal({ status: "otherResource", resource: "orders" });
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
    expect((await row("old")).body).to.equal("claimed");
  });

  it("a fenced write is one statement of the caller's transaction: a rollback undoes it", async () => {
    await fencedInsert(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { body: "v1" } });
    const c = await db.connect();
    try {
      await c.query("BEGIN");
      expect(await fencedUpdate(c, { table, id: "a", unverified: true, token: tok("r", 8), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 8n });
      await c.query("ROLLBACK");
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
    // A generation raised by hand keeps the old signature, which no longer covers it.
    const forged = { ...good, generation: 1_000n };
    expect(await fencedUpdate(db, { table, id: "a", token: forged, keys, set: { body: "forged" } })).to.deep.equal({ status: "unverified", reason: "bad signature" });
    expect(await fencedDelete(db, { table, id: "a", token: tok("r", 9), keys })).to.deep.equal({ status: "unverified", reason: "not signed" });
    expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
  });

  it("without keys or unverified: true, a forged generation 2^63-1 is thrown out before any SQL runs, and the row's real holder writes on", async () => {
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
    // Before: the fence became 9223372036854775807 and every real generation after it was "stale".
    expect(await row("a")).to.deep.equal({ body: "v1", fence_resource: "r", fence_token: "5", fence_deleted: false });
    expect((await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE id = 'b'`)).rows[0].n).to.equal(0);
    expect(await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 6), set: { body: "v2" } })).to.deep.equal({ status: "applied", fence: 6n });
  });

  it("refuses to let a caller set a fence column, and quotes names as given", async () => {
    let thrown: unknown;
    await fencedUpdate(db, { table, id: "a", unverified: true, token: tok("r", 5), set: { fence_token: 99 } }).catch((e) => (thrown = e));
    expect(thrown).to.be.instanceOf(RangeError);

    await db.query(`CREATE TABLE "Odd ""Name""" ("Key" text PRIMARY KEY, "my col" text)`);
    await db.query(fenceColumnsDdl('Odd "Name"'));
    const odd = { table: ["public", 'Odd "Name"'] as const, idColumn: "Key", id: "k" };
    expect(await fencedInsert(db, { ...odd, unverified: true, token: tok("r", 2), set: { "my col": "v" } })).to.deep.equal({ status: "applied", fence: 2n });
    expect(await fencedUpdate(db, { ...odd, unverified: true, token: tok("r", 1), set: { "my col": "w" } })).to.deep.equal({ status: "stale", fence: 2n });
  });
});
