// The fenced endpoint with the Redis and MariaDB fence stores (redisFenceStore, mariadbFenceStore) in
// front of a real node:http service, each store on a real server: the older generation is answered 409
// with the newer one's fence, and a forged token is refused before the store sees a command (counted by
// the store itself: Redis's INFO commandstats, MariaDB's Com_insert).
import { expect } from "chai";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import { FencekeeperClient, type Token } from "../../client/index.js";
import { admittedToken, fencedEndpoint, fencingTokenHeader } from "../../client/fenced-http.js";
import type { FenceStore } from "../../client/fence-store.js";
import { redisFenceStore } from "../../client/redis.js";
import { fenceTableDdl, mariadbFenceStore } from "../../client/mariadb.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { startMariadb, type TestMariadb } from "../harness/mariadb.js";
import { uniqueResource, useServer } from "../harness/suite.js";

interface Backend {
  store: FenceStore;
  /** The store's own count of the commands that could change a fence. */
  commands(): Promise<number>;
  close(): Promise<void>;
}

async function redisBackend(): Promise<Backend> {
  const server: TestRedis = await startRedis();
  const redis = new Redis({ host: server.host, port: server.ports[0], maxRetriesPerRequest: 1 });
  return {
    store: redisFenceStore(redis),
    async commands() {
      const info = await redis.info("commandstats");
      return [...info.matchAll(/^cmdstat_(?:evalsha|eval|fcall):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    },
    async close() {
      redis.disconnect();
      await server.destroy();
    },
  };
}

async function mariadbBackend(): Promise<Backend> {
  const server: TestMariadb = await startMariadb();
  const db = mysql.createPool({ ...server.options, connectionLimit: 2 });
  await db.query(fenceTableDdl());
  return {
    store: mariadbFenceStore(db),
    async commands() {
      const [rows] = await db.query("SHOW GLOBAL STATUS LIKE 'Com_insert'");
      return Number((rows as { Value: string }[])[0].Value);
    },
    async close() {
      await db.end();
      await server.destroy();
    },
  };
}

for (const [name, start] of [["Redis", redisBackend], ["MariaDB", mariadbBackend]] as const) {
  describe(`fenced HTTP endpoint with the ${name} fence store`, () => {
    const s = useServer();
    let backend: Backend;
    let client: FencekeeperClient;
    let server: Server;
    let url: string;
    const items = new Map<string, string>();

    before(async function () {
      this.timeout(90_000);
      backend = await start();
      client = new FencekeeperClient({ servers: s.server.url });
      const guard = fencedEndpoint({ keys: () => client.tokenKeys(), store: backend.store }).middleware((req) =>
        req.method === "PUT" ? decodeURIComponent(req.url!.slice(1)) : undefined,
      );
      server = createServer((req, res) =>
        guard(req, res, async () => {
          const chunks: Buffer[] = [];
          for await (const c of req) chunks.push(c as Buffer);
          items.set(admittedToken(req)!.resource, Buffer.concat(chunks).toString());
          res.end();
        }),
      );
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(async function () {
      this.timeout(30_000);
      await new Promise<void>((r) => (server ? (server.closeAllConnections(), server.close(() => r())) : r()));
      await client?.close();
      await backend?.close();
    });

    const put = (resource: string, token: Token, body: string) =>
      fetch(`${url}/${encodeURIComponent(resource)}`, { method: "PUT", headers: { "fencing-token": fencingTokenHeader(token) }, body });

    it("the older generation is answered 409 with the newer one's fence, and its write does not happen", async () => {
      const resource = uniqueResource("orders");
      const older = await client.acquire(resource, { ttl: 5000 });
      expect((await put(resource, older.token, "older")).status).to.equal(200);
      await older.release();
      const newer = await client.acquire(resource, { ttl: 5000 });
      expect((await put(resource, newer.token, "newer")).status).to.equal(200);
      const stale = await put(resource, older.token, "older-again");
      expect(stale.status).to.equal(409);
      expect(await stale.json()).to.include({ reason: "STALE_TOKEN", fence: String(newer.token.generation) });
      expect(items.get(resource)).to.equal("newer");
      await newer.release();
    });

    it(`a forged token is refused with 403 before ${name} sees a command`, async () => {
      const resource = uniqueResource("orders");
      const lease = await client.acquire(resource, { ttl: 5000 });
      expect((await put(resource, lease.token, "genuine")).status).to.equal(200);
      const before = await backend.commands();
      expect(before, `${name} counted the admit`).to.be.at.least(1);
      expect((await put(resource, { ...lease.token, generation: 2n ** 62n }, "forged")).status).to.equal(403);
      expect(await backend.commands()).to.equal(before);
      expect(items.get(resource)).to.equal("genuine");
      await lease.release();
    });
  });
}
