// A token copied by a bystander is worth nothing outside fencekeeper (docs/verifying-tokens.md). alice
// holds orders/*; carol may only observe it. Every read that shows alice's token to carol (Describe,
// ListResources, Observe) and the RESOURCE_HELD that bob is refused with, show it without its signature,
// so the copy carol takes is refused by every adapter that checks tokens offline: the fenced HTTP
// middleware, Redis's fencedSet, MariaDB's and PostgreSQL's fencedUpdate; alice's own token, as
// Acquire and her own Describe give it, is taken by all four. An admin still releases alice's lease with
// the unsigned token its Describe shows.
import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import pg from "pg";
import { FencekeeperClient, type Token, type TokenKey } from "../../client/index.js";
import { fencedEndpoint, fencingTokenHeader } from "../../client/fenced-http.js";
import type { FenceStore } from "../../client/fence-store.js";
import { fencedSet, resourceTag } from "../../client/redis.js";
import * as maria from "../../client/mariadb.js";
import * as postgres from "../../client/postgres.js";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencingTokenSchema, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { bearer, TestIssuer } from "../harness/bearer.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startMariadb, type TestMariadb } from "../harness/mariadb.js";
import { startPostgres, type TestPostgres } from "../harness/postgres.js";
import { failure, uniqueResource } from "../harness/suite.js";

const POLICY = {
  version: 1,
  rules: [
    { principals: ["alice", "bob"], verbs: ["acquire", "write", "read", "observe"], resources: ["orders/*"] },
    { principals: ["carol"], verbs: ["observe", "read"], resources: ["orders/*"] },
    { groups: ["sre"], verbs: ["admin", "observe", "read"], resources: ["*"] },
  ],
};
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

/** An in-memory fence per resource, for the HTTP middleware (the store is not what is under test). */
function memoryFences(): FenceStore {
  const fences = new Map<string, bigint>();
  return {
    async admit(resource, generation) {
      const fence = fences.get(resource) ?? 0n;
      if (generation < fence) return { status: "stale", fence };
      fences.set(resource, generation);
      return { status: "admitted", fence: generation };
    },
  };
}

describe("a token copied by a caller who may only observe is refused by every adapter outside fencekeeper", function () {
  this.timeout(120_000);
  let dir: string;
  let etcd: TestEtcd;
  let server: TestServer;
  let redisServer: TestRedis;
  let mariadb: TestMariadb;
  let pgServer: TestPostgres;
  let redis: Redis;
  let my: mysql.Pool;
  let pgPool: pg.Pool;
  let http: Server;
  let httpUrl: string;
  let issuer: TestIssuer;
  const clients: FencekeeperClient[] = [];
  const sessions: Http2SessionManager[] = [];
  let keys: TokenKey[];

  const jwt = (sub: string, groups: string[] = []) => issuer.token(sub, { groups });
  const sdkAs = async (sub: string, groups: string[] = []) => {
    const c = new FencekeeperClient({ servers: server.url, credentials: { bearer: await jwt(sub, groups) } });
    clients.push(c);
    return c;
  };
  const rawAs = async (sub: string, groups: string[] = []) => {
    const token = await jwt(sub, groups);
    const sessionManager = new Http2SessionManager(server.url);
    sessions.push(sessionManager);
    return createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, sessionManager, interceptors: [bearer(token)] }));
  };
  const put = (resource: string, token: Token) =>
    fetch(`${httpUrl}/items/${encodeURIComponent(resource)}`, { method: "PUT", headers: { "fencing-token": fencingTokenHeader(token) }, body: "x", signal: AbortSignal.timeout(10_000) });

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-copied-"));
    issuer = await TestIssuer.create(dir, { policy: POLICY });
    [etcd, redisServer, mariadb, pgServer] = await Promise.all([startEtcd(), startRedis(), startMariadb(), startPostgres()]);
    server = await startServer({ etcd: etcd.endpoint, args: issuer.args });
    redis = new Redis({ host: redisServer.host, port: redisServer.ports[0], maxRetriesPerRequest: 1 });
    my = mysql.createPool({ ...mariadb.options, connectionLimit: 2 });
    pgPool = new pg.Pool({ connectionString: pgServer.url });
    await my.query("CREATE TABLE docs (id VARCHAR(64) PRIMARY KEY, body TEXT NOT NULL)");
    await my.query(maria.fenceColumnsDdl("docs"));
    await pgPool.query("CREATE TABLE docs (id text PRIMARY KEY, body text NOT NULL)");
    await pgPool.query(postgres.fenceColumnsDdl("docs"));
    keys = await (await sdkAs("alice")).tokenKeys();
    const fenced = fencedEndpoint({ keys, store: memoryFences() }).middleware((req) => (req.url?.startsWith("/items/") ? decodeURIComponent(req.url.slice(7)) : undefined));
    http = createServer((req, res) => fenced(req, res, (err) => res.writeHead(err ? 500 : 200).end()));
    await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
    httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  after(async function () {
    this.timeout(60_000);
    for (const m of sessions) m.abort();
    await Promise.all(clients.map((c) => c.close()));
    if (http) await new Promise<void>((r) => (http.closeAllConnections(), http.close(() => r())));
    await redis?.quit();
    await my?.end();
    await pgPool?.end();
    await server?.stop();
    await Promise.all([etcd?.destroy(), redisServer?.destroy(), mariadb?.destroy(), pgServer?.destroy()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("carol's copy from Describe, ListResources, Observe and bob's RESOURCE_HELD has no signature; the HTTP middleware, Redis, MariaDB and PostgreSQL refuse it and take alice's own", async () => {
    const resource = uniqueResource("orders/copied");
    const alice = await sdkAs("alice");
    const carol = await sdkAs("carol");
    const lease = await alice.acquire(resource, { ttl: 30_000, value: new Uint8Array([1]) });
    expect(lease.token.signature, "Acquire's answer is signed").to.have.length(64);
    expect((await alice.describe(resource)).token!.signature, "alice's own Describe shows her the signature").to.have.length(64);

    // What carol can read of alice's token: no signature, no key id, in every answer.
    const described = (await carol.describe(resource)).token!;
    const carolRaw = await rawAs("carol");
    const listed = (await carolRaw.listResources({ prefix: resource })).resources[0].state!.token!;
    let observed: FencingToken | undefined;
    for await (const o of carolRaw.observe({ resource }, { signal: AbortSignal.timeout(20_000) })) {
      observed = o.token;
      break;
    }
    const held = await failure((await rawAs("bob")).acquire({ resource, ttl: ttl(10), holder: "bob" }));
    expect(held.code).to.equal(Code.Aborted);
    expect(held.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("RESOURCE_HELD");
    const inError = held.findDetails(FencingTokenSchema)[0];
    for (const [where, t] of [["Describe", described], ["ListResources", listed], ["Observe", observed!], ["RESOURCE_HELD", inError]] as const) {
      expect(t, where).to.not.equal(undefined);
      expect(t.generation, where).to.equal(lease.token.generation);
      expect(t.principal, where).to.equal("alice");
      expect(t.signature?.length ?? 0, `${where} shows carol no signature`).to.equal(0);
      expect(t.keyId ?? "", where).to.equal("");
    }
    const copied = described;

    // The fenced HTTP middleware: 403 for the copy, 200 for alice.
    const refused = await put(resource, copied);
    expect(refused.status).to.equal(403);
    expect(await refused.text()).to.include("not signed");
    expect((await put(resource, lease.token)).status).to.equal(200);

    // Redis: nothing reaches Redis under the copy.
    const rkey = `doc:${resourceTag(resource)}`;
    expect(await fencedSet(redis, { key: rkey, value: "carol", token: copied, keys })).to.deep.equal({ status: "unverified", reason: "not signed" });
    expect(await redis.get(rkey)).to.equal(null);
    expect(await fencedSet(redis, { key: rkey, value: "alice", token: lease.token, keys })).to.deep.equal({ status: "applied", fence: lease.token.generation });

    // MariaDB and PostgreSQL: the row alice inserted keeps her body.
    expect(await maria.fencedInsert(my, { table: "docs", id: resource, token: lease.token, keys, set: { body: "alice" } })).to.deep.equal({ status: "applied", fence: lease.token.generation });
    expect(await maria.fencedUpdate(my, { table: "docs", id: resource, token: copied, keys, set: { body: "carol" } })).to.deep.equal({ status: "unverified", reason: "not signed" });
    const [rows] = await my.query<mysql.RowDataPacket[]>("SELECT body FROM docs WHERE id = ?", [resource]);
    expect(rows[0].body).to.equal("alice");
    expect(await postgres.fencedInsert(pgPool, { table: "docs", id: resource, token: lease.token, keys, set: { body: "alice" } })).to.deep.equal({ status: "applied", fence: lease.token.generation });
    expect(await postgres.fencedUpdate(pgPool, { table: "docs", id: resource, token: copied, keys, set: { body: "carol" } })).to.deep.equal({ status: "unverified", reason: "not signed" });
    expect((await pgPool.query("SELECT body FROM docs WHERE id = $1", [resource])).rows[0].body).to.equal("alice");
    await lease.release();
  });

  it("an admin releases alice's lease with the unsigned token its Describe shows; the transaction names exactly her generation", async () => {
    const resource = uniqueResource("orders/admin");
    const alice = await sdkAs("alice");
    const lease = await alice.acquire(resource, { ttl: 30_000 });
    const sre = await rawAs("dave", ["sre"]);
    const shown = (await sre.describe({ resource })).token!;
    expect(shown.signature).to.have.length(0);
    // A generation the holder does not have is not released: NOT_FOUND, the lease stays.
    const wrong = await failure(sre.release({ token: { ...shown, generation: shown.generation + 1n } }));
    expect(wrong.code).to.equal(Code.NotFound);
    expect((await sre.describe({ resource })).held).to.equal(true);
    await sre.release({ token: shown });
    expect((await sre.describe({ resource })).held).to.equal(false);
    await lease.release().catch(() => undefined);
  });
});
