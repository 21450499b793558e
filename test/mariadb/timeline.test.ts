// The article's timeline against a real MariaDB table: holder A, paused past its TTL, comes back and
// writes the row that B, granted after A's lease ran out, has written since. The UPDATE affects 0 rows,
// the helper says "stale" with B's generation as the fence, and B's row is intact. Then two generations
// writing at once, and a forged token that never reaches the server.
import { expect } from "chai";
import mysql from "mysql2/promise";
import { FencekeeperClient, type Token } from "../../client/index.js";
import { fencedDelete, fencedInsert, fencedUpdate } from "../../client/mariadb.js";
import { ProcessClient } from "../harness/process-client.js";
import { startMariadb, type TestMariadb } from "../harness/mariadb.js";
import { useServer, uniqueResource } from "../harness/suite.js";

const HOLDER = "test/mariadb/my-holder.ts";

describe("MariaDB: a paused holder's stale write", () => {
  const s = useServer();
  let server: TestMariadb;
  let db: mysql.Pool;
  const procs: ProcessClient[] = [];
  const holder = () => {
    const p = new ProcessClient(HOLDER, [s.server.url, JSON.stringify(server.options), "orders"]);
    procs.push(p);
    return p;
  };
  const row = async (id: string) => {
    const [rows] = await db.query<mysql.RowDataPacket[]>(
      "SELECT body, CAST(fence_resource AS CHAR) AS fence_resource, CAST(fence_token AS CHAR) AS fence_token, fence_deleted FROM orders WHERE id = ?",
      [id],
    );
    return rows.map((r) => ({ ...r, fence_deleted: Boolean(r.fence_deleted) }));
  };

  before(async function () {
    this.timeout(60_000);
    server = await startMariadb();
    db = mysql.createPool({ ...server.options, connectionLimit: 2 });
    await db.query(`CREATE TABLE orders (id VARCHAR(200) PRIMARY KEY, body TEXT NOT NULL,
      fence_resource VARBINARY(256), fence_token BIGINT CHECK (fence_token > 0), fence_deleted BOOLEAN NOT NULL DEFAULT FALSE)`);
  });
  after(async function () {
    this.timeout(30_000);
    await db?.end();
    await server?.destroy();
  });
  afterEach(() => procs.splice(0).forEach((p) => p.kill()));

  it("A paused past its TTL updates 0 rows once B has written, and B's row stays", async () => {
    const resource = uniqueResource("orders");
    const a = holder();
    const b = holder();

    const tokenA = (await a.send(`acquire ${resource} 2000`)).token;
    expect(await a.send(`insert ${resource}/1 from-A`)).to.deep.equal({ status: "applied", fence: tokenA.generation });

    a.pause(); // a scheduler pause, a stalled runtime: A does not know, and stops renewing
    // B waits in line and is granted once A's lease has run out on the server.
    const tokenB = (await b.send(`acquire ${resource} 10000`, 30_000)).token;
    expect(BigInt(tokenB.generation) > BigInt(tokenA.generation)).to.equal(true);
    expect(await b.send(`update ${resource}/1 from-B`)).to.deep.equal({ status: "applied", fence: tokenB.generation });

    a.resume();
    expect(await a.send("held")).to.deep.equal({ held: false }); // its SDK knows, but A writes anyway
    expect(await a.send(`bare-update ${resource}/1 from-A-stale`)).to.deep.equal({ affectedRows: 0 });
    expect(await a.send(`update ${resource}/1 from-A-stale`)).to.deep.equal({ status: "stale", fence: tokenB.generation });
    expect(await a.send(`insert ${resource}/1 from-A-stale`)).to.deep.equal({ status: "stale", fence: tokenB.generation });
    expect(await a.send(`delete ${resource}/1`)).to.deep.equal({ status: "stale", fence: tokenB.generation });

    expect(await row(`${resource}/1`)).to.deep.equal([{ body: "from-B", fence_resource: resource, fence_token: tokenB.generation, fence_deleted: false }]);
  });

  it("two generations writing at once never leave the older one's data after the newer one's", async () => {
    const resource = uniqueResource("orders");
    const id = `${resource}/1`;
    const a = holder();
    const b = holder();
    const tokenA = (await a.send(`acquire ${resource} 2000`)).token;
    expect(await a.send(`insert ${id} from-A`)).to.deep.equal({ status: "applied", fence: tokenA.generation });
    a.pause();
    const tokenB = (await b.send(`acquire ${resource} 10000`, 30_000)).token;
    a.resume();

    // Both write the row 40 times at once; A's writes apply until B's first one does, none after it.
    const n = 40;
    a.post(`updates ${id} A ${n}`);
    b.post(`updates ${id} B ${n}`);
    const [fromA, fromB] = await Promise.all([a.next(30_000), b.next(30_000)]);
    expect(fromB.outcomes).to.deep.equal(Array(n).fill("applied"));
    const firstStale = fromA.outcomes.indexOf("stale");
    const applied = firstStale === -1 ? n : firstStale;
    expect(fromA.outcomes).to.deep.equal([...Array(applied).fill("applied"), ...Array(n - applied).fill("stale")]);
    expect(await row(id)).to.deep.equal([{ body: `B-${n - 1}`, fence_resource: resource, fence_token: tokenB.generation, fence_deleted: false }]);
  });

  it("a forged token is refused before any statement reaches MariaDB (the server's own counters)", async () => {
    const resource = uniqueResource("orders");
    const id = `${resource}/1`;
    const fk = new FencekeeperClient({ servers: s.server.url });
    try {
      const lease = await fk.acquire(resource, { ttl: 10_000 });
      const keys = await fk.tokenKeys();
      expect(await fencedInsert(db, { table: "orders", id, token: lease.token, keys, set: { body: "genuine" } })).to.deep.equal({ status: "applied", fence: lease.token.generation });

      // The generation raised by hand (to lock every later holder out), the signature left as it was.
      const forged: Token = { ...lease.token, generation: 2n ** 63n - 1n };
      const counters = async () => {
        const [rows] = await db.query<mysql.RowDataPacket[]>(
          "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_execute', 'Com_insert', 'Com_update', 'Com_delete')",
        );
        return Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
      };
      const before = await counters();
      expect(await fencedUpdate(db, { table: "orders", id, token: forged, keys, set: { body: "forged" } })).to.deep.equal({ status: "unverified", reason: "bad signature" });
      expect(await fencedInsert(db, { table: "orders", id: `${id}-new`, token: forged, keys, set: { body: "forged" } })).to.deep.equal({ status: "unverified", reason: "bad signature" });
      expect(await fencedDelete(db, { table: "orders", id, token: forged, keys })).to.deep.equal({ status: "unverified", reason: "bad signature" });
      expect(await counters()).to.deep.equal(before);

      // The counters do move for a genuine write: the comparison above could have failed.
      expect(await fencedUpdate(db, { table: "orders", id, token: lease.token, keys, set: { body: "genuine-2" } })).to.deep.equal({ status: "applied", fence: lease.token.generation });
      const after = await counters();
      expect(after.Com_stmt_execute).to.be.greaterThan(before.Com_stmt_execute);
      expect(await row(id)).to.deep.equal([{ body: "genuine-2", fence_resource: resource, fence_token: String(lease.token.generation), fence_deleted: false }]);
      expect(await row(`${id}-new`)).to.deep.equal([]);
      await lease.release();
    } finally {
      await fk.close();
    }
  });
});
