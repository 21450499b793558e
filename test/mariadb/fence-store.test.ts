// mariadbFenceStore (client/fence-store.ts's FenceStore on a MariaDB table) against a real MariaDB, through
// mysql2 with and without CLIENT_FOUND_ROWS: one statement per admit, whose answer says admitted or stale.
import { expect } from "chai";
import mysql from "mysql2/promise";
import { fenceTableDdl, mariadbFenceStore } from "../../client/mariadb.js";
import { startMariadb, type TestMariadb } from "../harness/mariadb.js";

describe("MariaDB fence store", () => {
  let server: TestMariadb;
  let foundRows: mysql.Pool; // mysql2's default flags: CLIENT_FOUND_ROWS on
  let changedOnly: mysql.Pool;
  let n = 0;

  before(async function () {
    this.timeout(60_000);
    server = await startMariadb();
    // One connection each: an admit after another on the same connection must not see the last one's id.
    foundRows = mysql.createPool({ ...server.options, connectionLimit: 1 });
    changedOnly = mysql.createPool({ ...server.options, connectionLimit: 1, flags: ["-FOUND_ROWS"] });
    await foundRows.query(fenceTableDdl());
  });
  after(async function () {
    this.timeout(30_000);
    await foundRows?.end();
    await changedOnly?.end();
    await server?.destroy();
  });

  for (const [mode, pool] of [["with CLIENT_FOUND_ROWS", () => foundRows], ["without CLIENT_FOUND_ROWS", () => changedOnly]] as const) {
    it(`${mode}: the first generation is admitted, an equal or newer one too, an older one is stale with the fence`, async () => {
      const store = mariadbFenceStore(pool());
      const r = `orders-${++n}`;
      expect(await store.admit(r, 5n)).to.deep.equal({ status: "admitted", fence: 5n });
      expect(await store.admit(r, 5n)).to.deep.equal({ status: "admitted", fence: 5n });
      expect(await store.admit(r, 4n)).to.deep.equal({ status: "stale", fence: 5n });
      expect(await store.admit(r, 9n)).to.deep.equal({ status: "admitted", fence: 9n });
      expect(await store.admit(r, 5n)).to.deep.equal({ status: "stale", fence: 9n });
      // Another resource is new, whatever the last admit on this connection left in LAST_INSERT_ID().
      expect(await store.admit(`${r}-other`, 2n)).to.deep.equal({ status: "admitted", fence: 2n });
      expect(await store.admit(`${r}-other`, 1n)).to.deep.equal({ status: "stale", fence: 2n });
    });
  }

  it("compares resources as bytes and generations past 2^53 exactly", async () => {
    const store = mariadbFenceStore(foundRows);
    const r = `Orders-${++n}`;
    const big = 2n ** 53n + 1n;
    expect(await store.admit(r, big)).to.deep.equal({ status: "admitted", fence: big });
    expect(await store.admit(r, big - 1n)).to.deep.equal({ status: "stale", fence: big });
    expect(await store.admit(r, big)).to.deep.equal({ status: "admitted", fence: big });
    expect(await store.admit(r.toLowerCase(), 1n)).to.deep.equal({ status: "admitted", fence: 1n });
    expect(await store.admit(`${r} `, 1n)).to.deep.equal({ status: "admitted", fence: 1n });
  });

  it("admits racing on one resource: the fence ends at the greatest, and every stale answer names a greater fence", async () => {
    const pool = mysql.createPool({ ...server.options, connectionLimit: 8 });
    try {
      const store = mariadbFenceStore(pool, { table: "fencekeeper_fences" });
      const r = `race-${++n}`;
      const generations = Array.from({ length: 60 }, (_, i) => BigInt(1 + ((i * 37) % 60)));
      const verdicts = await Promise.all(generations.map((g) => store.admit(r, g)));
      verdicts.forEach((v, i) => {
        if (v.status === "admitted") expect(v.fence).to.equal(generations[i]);
        else expect(v.fence > generations[i]).to.equal(true);
      });
      expect(await store.admit(r, 60n)).to.deep.equal({ status: "admitted", fence: 60n });
      expect(verdicts[generations.indexOf(60n)]).to.deep.equal({ status: "admitted", fence: 60n });
    } finally {
      await pool.end();
    }
  });

  it("refuses a generation no token carries", async () => {
    const thrown = await mariadbFenceStore(foundRows).admit("x", 0n).then(() => undefined, (e: unknown) => e);
    expect(thrown).to.be.instanceOf(RangeError);
  });
});
