// The fenced HTTP endpoint (client/fenced-http.ts) in front of a real node:http service that keeps its
// items and its fences in a real PostgreSQL (postgresFenceStore). The article's timeline with a holder
// process paused past its TTL; forged tokens refused before the store is asked; a flood of unknown key
// ids costing one key fetch; two generations in flight at once leaving the newer one's data.
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { FencekeeperClient, type Token } from "../../client/index.js";
import { admittedToken, fencedEndpoint, fencingTokenHeader, TokenKeyCache, type FencedEndpointOptions } from "../../client/fenced-http.js";
import type { FenceStore } from "../../client/fence-store.js";
import { fenceTableDdl, postgresFenceStore } from "../../client/postgres-fence-store.js";
import { ProcessClient } from "../harness/process-client.js";
import { startPostgres, type TestPostgres } from "../harness/postgres.js";
import { eventually, sleep, uniqueResource, useServer } from "../harness/suite.js";
import { scrape } from "../operations/support/metrics.js";

const HOLDER = "test/fenced-http/http-holder.ts";

/** A service that owns its items: PUT /items/<resource> writes the body as the resource's item. "slow..." bodies take 400 ms to write. */
async function startService(db: pg.Pool, o: Omit<FencedEndpointOptions, "store"> & { store: FenceStore }): Promise<{ url: string; server: Server }> {
  const fenced = fencedEndpoint(o).middleware((req) => (req.method === "PUT" && req.url?.startsWith("/items/") ? decodeURIComponent(req.url.slice(7)) : undefined));
  const server = createServer((req, res) => {
    fenced(req, res, async (err) => {
      if (err) return res.writeHead(500).end(String(err));
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks).toString();
      const token = admittedToken(req)!;
      if (body.startsWith("slow")) await sleep(400);
      await db.query(
        "INSERT INTO items (resource, body, generation) VALUES ($1, $2, $3) ON CONFLICT (resource) DO UPDATE SET body = EXCLUDED.body, generation = EXCLUDED.generation",
        [token.resource, body, String(token.generation)],
      );
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ written: body }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const closeServer = (s: Server) => new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); });

describe("fenced HTTP endpoint: a node:http service with its fences in PostgreSQL", () => {
  const s = useServer();
  let postgres: TestPostgres;
  let db: pg.Pool;
  let client: FencekeeperClient;
  let service: { url: string; server: Server };
  let keyFetches = 0;
  let admits = 0;
  const keys = new TokenKeyCache(() => (keyFetches++, client.tokenKeys()), { minRefreshMs: 60_000 });
  const procs: ProcessClient[] = [];
  const holder = () => {
    const p = new ProcessClient(HOLDER, [s.server.url, service.url]);
    procs.push(p);
    return p;
  };
  const item = async (resource: string) => (await db.query("SELECT body, generation FROM items WHERE resource = $1", [resource])).rows;
  const attempts = async () => Number((await db.query("SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM admit_attempts")).rows[0].n);
  const fence = async (resource: string) => (await db.query("SELECT fence FROM fencekeeper_fences WHERE resource = $1", [resource])).rows;
  const put = (resource: string, token: Token | string | undefined, body: string) =>
    fetch(`${service.url}/items/${encodeURIComponent(resource)}`, {
      method: "PUT",
      headers: token === undefined ? {} : { "fencing-token": typeof token === "string" ? token : fencingTokenHeader(token) },
      body,
      signal: AbortSignal.timeout(5000), // a request stuck behind a turn never given back fails, not hangs
    });

  before(async function () {
    this.timeout(60_000);
    postgres = await startPostgres();
    db = new pg.Pool({ connectionString: postgres.url });
    await db.query(fenceTableDdl());
    // PostgreSQL's own count of admits: every admit begins with an INSERT into the fence table, and a
    // BEFORE INSERT row trigger fires for each, conflicting or not. A sequence, not a counter row: it
    // takes no lock that would serialize admits by itself, and others see it at once, not at COMMIT.
    await db.query(`CREATE SEQUENCE admit_attempts;
      CREATE FUNCTION count_admit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM nextval('admit_attempts'); RETURN NEW; END $$;
      CREATE TRIGGER count_admit BEFORE INSERT ON fencekeeper_fences FOR EACH ROW EXECUTE FUNCTION count_admit();`);
    await db.query("CREATE TABLE items (resource text PRIMARY KEY, body text NOT NULL, generation bigint NOT NULL)");
    client = new FencekeeperClient({ servers: s.server.url });
    const store = postgresFenceStore(db);
    service = await startService(db, { keys, store: { admit: (r, g) => (admits++, store.admit(r, g)) } });
  });
  after(async function () {
    this.timeout(30_000);
    if (service) await closeServer(service.server);
    await client?.close();
    await db?.end();
    await postgres?.destroy();
  });
  afterEach(() => procs.splice(0).forEach((p) => p.kill()));

  it("A paused past its TTL is answered 409 with B's fence once B has written, and B's item stays", async () => {
    const resource = uniqueResource("orders");
    const a = holder();
    const b = holder();
    const tokenA = (await a.send(`acquire ${resource} 2000`)).token;
    expect(await a.send("put from-A")).to.deep.equal({ status: 200, body: { written: "from-A" } });

    a.pause();
    const tokenB = (await b.send(`acquire ${resource} 10000`, 30_000)).token;
    expect(BigInt(tokenB.generation) > BigInt(tokenA.generation)).to.equal(true);
    expect(await b.send("put from-B")).to.deep.equal({ status: 200, body: { written: "from-B" } });

    a.resume();
    expect(await a.send("held")).to.deep.equal({ held: false }); // its SDK knows, but A writes anyway
    const stale = await a.send("put from-A-stale");
    expect(stale.status).to.equal(409);
    expect(stale.body).to.include({ code: "FailedPrecondition", reason: "STALE_TOKEN", resource, generation: tokenA.generation, fence: tokenB.generation });
    expect(await item(resource)).to.deep.equal([{ body: "from-B", generation: tokenB.generation }]);
    expect(await fence(resource)).to.deep.equal([{ fence: tokenB.generation }]);
  });

  it("refuses a forged or altered token with 403 before the store is asked, and a missing or malformed header with 400", async () => {
    const resource = uniqueResource("orders");
    const lease = await client.acquire(resource, { ttl: 5000 });
    expect((await put(resource, lease.token, "genuine")).status).to.equal(200);
    const before = admits;
    const attemptsBefore = await attempts();
    expect(attemptsBefore, "the trigger counts admits").to.be.at.least(1);

    // A made-up generation far ahead, signature kept: it would lock every real holder out if admitted.
    const forged = await put(resource, { ...lease.token, generation: 2n ** 62n }, "forged");
    expect(forged.status).to.equal(403);
    expect(await forged.json()).to.include({ code: "PermissionDenied", reason: "TOKEN_SIGNATURE_INVALID" });
    const unsigned = await put(resource, { ...lease.token, signature: undefined }, "unsigned");
    expect(unsigned.status).to.equal(403);
    // A genuine token of another resource.
    const elsewhere = await put(`${resource}-other`, lease.token, "elsewhere");
    expect(elsewhere.status).to.equal(403);
    expect((await elsewhere.json()).message).to.match(/is for ".*", and this request writes/);
    const missing = await put(resource, undefined, "no header");
    expect(missing.status).to.equal(400);
    expect((await missing.json()).message).to.match(/needs its fencing token in the fencing-token header/);
    expect((await put(resource, "not base64!", "junk")).status).to.equal(400);
    expect((await put(resource, Buffer.from("garbage").toString("base64"), "junk")).status).to.equal(400);

    expect(admits, "the store was asked").to.equal(before);
    expect(await attempts(), "PostgreSQL saw an admit").to.equal(attemptsBefore);
    expect(await item(resource)).to.deep.equal([{ body: "genuine", generation: String(lease.token.generation) }]);
    expect(await fence(resource)).to.deep.equal([{ fence: String(lease.token.generation) }]);
    await lease.release();
  });

  it("a flood of tokens naming unknown key ids costs at most one key fetch", async () => {
    const resource = uniqueResource("orders");
    const lease = await client.acquire(resource, { ttl: 5000 });
    expect((await put(resource, lease.token, "genuine")).status).to.equal(200);
    const served = async () =>
      (await scrape(s.server)).value("grpc_server_handled_total", { grpc_service: "fencekeeper.v1.LeaseService", grpc_method: "ListTokenKeys", grpc_code: "OK" });
    const before = keyFetches;
    const servedBefore = await served();
    expect(servedBefore, "the server counted the first fetch").to.be.at.least(1);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => put(resource, { ...lease.token, keyId: `forged-${i}` }, "x")));
    expect(answers.map((r) => r.status)).to.deep.equal(Array(50).fill(403));
    expect(keyFetches - before).to.be.at.most(1);
    expect((await served()) - servedBefore, "ListTokenKeys served").to.be.at.most(1);
    await lease.release();
  });

  it("an older generation admitted just before a newer one cannot finish its write after it", async () => {
    const resource = uniqueResource("orders");
    const older = await client.acquire(resource, { ttl: 5000 });
    await older.release();
    const newer = await client.acquire(resource, { ttl: 5000 });
    // The older write is admitted first and takes 400 ms; the newer arrives while it is under way.
    const attempted = await attempts();
    const slow = put(resource, older.token, "slow-older");
    await eventually(async () => (await attempts()) > attempted, "the older write admitted");
    const fast = await put(resource, newer.token, "newer");
    expect(fast.status).to.equal(200);
    expect((await slow).status).to.equal(200);
    expect(await item(resource)).to.deep.equal([{ body: "newer", generation: String(newer.token.generation) }]);
    await newer.release();
  });

  it("a client that goes away while its request waits for the resource's turn does not keep the turn", async () => {
    const resource = uniqueResource("orders");
    const lease = await client.acquire(resource, { ttl: 5000 });
    const attempted = await attempts();
    const slow = put(resource, lease.token, "slow-first"); // holds the turn for 400 ms
    await eventually(async () => (await attempts()) > attempted, "the first write admitted");
    const gone = new AbortController();
    const waiting = fetch(`${service.url}/items/${encodeURIComponent(resource)}`, {
      method: "PUT",
      headers: { "fencing-token": fencingTokenHeader(lease.token) },
      body: "never",
      signal: gone.signal,
    }).catch((err: Error) => err.name);
    await sleep(100);
    gone.abort(); // while it waits behind the first
    expect(await waiting).to.equal("AbortError");
    expect((await slow).status).to.equal(200);
    // The next request gets its turn: the one that went away left it.
    const next = await put(resource, lease.token, "after").catch((err: Error) => err.name);
    expect(next instanceof Response ? next.status : next).to.equal(200);
    await lease.release();
  });

  it("without serialize, admitting inside the handler's transaction keeps the newer data (the form for many instances)", async () => {
    const fenced = fencedEndpoint({ keys, store: postgresFenceStore(db), serialize: false });
    // Each request: BEGIN; admit on the transaction's connection; write; COMMIT. The admit's row lock
    // holds a concurrent admit of the resource, from any process, until this transaction ends.
    const server = createServer(async (req, res) => {
      const resource = decodeURIComponent(req.url!.slice(7));
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks).toString();
      const tx = await db.connect();
      try {
        await tx.query("BEGIN");
        const a = await fenced.admit(req.headers, resource, { store: postgresFenceStore(tx) });
        if (!a.ok) {
          await tx.query("ROLLBACK");
          return res.writeHead(a.httpStatus).end(a.message);
        }
        if (body.startsWith("slow")) await sleep(400);
        await tx.query(
          "INSERT INTO items (resource, body, generation) VALUES ($1, $2, $3) ON CONFLICT (resource) DO UPDATE SET body = EXCLUDED.body, generation = EXCLUDED.generation",
          [resource, body, String(a.token.generation)],
        );
        await tx.query("COMMIT");
        a.done();
        res.writeHead(200).end();
      } finally {
        tx.release();
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const resource = uniqueResource("orders");
      const older = await client.acquire(resource, { ttl: 5000 });
      await older.release();
      const newer = await client.acquire(resource, { ttl: 5000 });
      const at = (token: Token, body: string) =>
        fetch(`${url}/items/${encodeURIComponent(resource)}`, { method: "PUT", headers: { "fencing-token": fencingTokenHeader(token) }, body });
      const attempted = await attempts();
      const slow = at(older.token, "slow-older");
      await eventually(async () => (await attempts()) > attempted, "the older write admitted");
      expect((await at(newer.token, "newer")).status).to.equal(200);
      expect((await slow).status).to.equal(200);
      expect(await item(resource)).to.deep.equal([{ body: "newer", generation: String(newer.token.generation) }]);
      // And the older one, once more, is now stale.
      expect((await at(older.token, "older-again")).status).to.equal(409);
      await newer.release();
    } finally {
      await closeServer(server);
    }
  });

  it("without serialize the same race leaves the older data (why it is on by default)", async () => {
    const store = postgresFenceStore(db);
    const loose = await startService(db, { keys, store, serialize: false });
    try {
      const resource = uniqueResource("orders");
      const older = await client.acquire(resource, { ttl: 5000 });
      await older.release();
      const newer = await client.acquire(resource, { ttl: 5000 });
      const at = (token: Token, body: string) =>
        fetch(`${loose.url}/items/${encodeURIComponent(resource)}`, { method: "PUT", headers: { "fencing-token": fencingTokenHeader(token) }, body });
      const attempted = await attempts();
      const slow = at(older.token, "slow-older");
      await eventually(async () => (await attempts()) > attempted, "the older write admitted");
      expect((await at(newer.token, "newer")).status).to.equal(200);
      expect((await slow).status).to.equal(200);
      expect(await item(resource)).to.deep.equal([{ body: "slow-older", generation: String(older.token.generation) }]);
      await newer.release();
    } finally {
      await closeServer(loose.server);
    }
  });
});
