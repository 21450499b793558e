// The article's timeline against a real PostgreSQL table: holder A, paused past its TTL, comes back and
// updates the row that B, granted after A's lease ran out, has written since. The UPDATE affects 0 rows,
// the helper says "stale" with B's generation as the fence, and B's row is intact.
import { expect } from "chai";
import pg from "pg";
import { ProcessClient } from "../harness/process-client.js";
import { startPostgres, type TestPostgres } from "../harness/postgres.js";
import { useServer, uniqueResource } from "../harness/suite.js";

const HOLDER = "test/postgres/pg-holder.ts";

describe("PostgreSQL: a paused holder's stale UPDATE", () => {
  const s = useServer();
  let postgres: TestPostgres;
  let db: pg.Pool;
  const procs: ProcessClient[] = [];
  const holder = () => {
    const p = new ProcessClient(HOLDER, [s.server.url, postgres.url, "orders"]);
    procs.push(p);
    return p;
  };

  before(async function () {
    this.timeout(60_000);
    postgres = await startPostgres();
    db = new pg.Pool({ connectionString: postgres.url });
    await db.query(`CREATE TABLE orders (id text PRIMARY KEY, body text NOT NULL,
      fence_resource text, fence_token bigint CHECK (fence_token > 0), fence_deleted boolean NOT NULL DEFAULT false)`);
  });
  after(async function () {
    this.timeout(30_000);
    await db?.end();
    await postgres?.destroy();
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
    expect(await a.send(`bare-update ${resource}/1 from-A-stale`)).to.deep.equal({ rowCount: 0 });
    expect(await a.send(`update ${resource}/1 from-A-stale`)).to.deep.equal({ status: "stale", fence: tokenB.generation });
    expect(await a.send(`delete ${resource}/1`)).to.deep.equal({ status: "stale", fence: tokenB.generation });

    const { rows } = await db.query("SELECT body, fence_resource, fence_token, fence_deleted FROM orders WHERE id = $1", [`${resource}/1`]);
    expect(rows).to.deep.equal([{ body: "from-B", fence_resource: resource, fence_token: tokenB.generation, fence_deleted: false }]);
  });
});
