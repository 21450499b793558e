// The stores the fenced-write suite runs against, each as data: how to start a real one for the file, where
// a holder of a resource writes in it, how to read back what it holds, and what its recipe has that the
// others do not. The writes themselves go through test/fenced-stores/adapters.ts.
import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import pg from "pg";
import { fenceKey, resourceTag } from "../../client/redis.js";
import { startMariadb } from "../harness/mariadb.js";
import { startPostgres } from "../harness/postgres.js";
import { startRedis } from "../harness/redis.js";
import type { StoreAddress } from "./adapters.js";

/** What a store holds at an id: its value, and the resource and generation of the fence it is under. */
export interface Held {
  value: string;
  resource: string;
  fence: string;
}

export interface RunningStore {
  /** The address adapters connect to; `via` puts another port (a proxy in front of the store) in its place. */
  address(via?: number): StoreAddress;
  /** The store's own port (what a proxy forwards to). */
  readonly port: number;
  /** What the store holds at `id` of `resource`; undefined when nothing (or a delete's tombstone). */
  read(resource: string, id: string): Promise<Held | undefined>;
  destroy(): Promise<void>;
}

export interface StoreUnderTest {
  readonly title: string;
  /** Where a holder of `resource` writes its n-th row or key (Redis keys carry the resource's hash tag). */
  id(resource: string, n: number): string;
  /**
   * Whether the fence is the resource's, one for all its keys (Redis: a write to a key nobody wrote is
   * stale too), or each row's (SQL: a row carries the generation that last wrote it).
   */
  readonly fencePerResource: boolean;
  /** The writes only this store has (test/fenced-stores/adapters.ts, `more`). */
  readonly more: string[];
  /** Whether the recipe has a conditional UPDATE a program can write by hand (adapters.ts, `bare`). */
  readonly bare: boolean;
  start(): Promise<RunningStore>;
}

const TABLE = "orders";

export const STORES: StoreUnderTest[] = [
  {
    title: "PostgreSQL",
    id: (resource, n) => `${resource}/${n}`,
    fencePerResource: false,
    more: [],
    bare: true,
    async start() {
      const server = await startPostgres();
      const db = new pg.Pool({ connectionString: server.url, max: 2 });
      await db.query(`CREATE TABLE ${TABLE} (id text PRIMARY KEY, body text NOT NULL,
        fence_resource text, fence_token bigint CHECK (fence_token > 0), fence_deleted boolean NOT NULL DEFAULT false)`);
      const url = new URL(server.url);
      return {
        port: Number(url.port),
        address: (via) => ({ store: "postgres", url: via ? Object.assign(new URL(server.url), { port: String(via) }).href : server.url, table: TABLE }),
        async read(_resource, id) {
          const { rows } = await db.query(`SELECT body, fence_resource, fence_token, fence_deleted FROM ${TABLE} WHERE id = $1`, [id]);
          const r = rows[0];
          return r && !r.fence_deleted ? { value: r.body, resource: r.fence_resource, fence: String(r.fence_token) } : undefined;
        },
        async destroy() {
          await db.end();
          await server.destroy();
        },
      };
    },
  },
  {
    title: "MariaDB",
    id: (resource, n) => `${resource}/${n}`,
    fencePerResource: false,
    more: [],
    bare: true,
    async start() {
      const server = await startMariadb();
      const db = mysql.createPool({ ...server.options, connectionLimit: 2 });
      await db.query(`CREATE TABLE ${TABLE} (id VARCHAR(200) PRIMARY KEY, body TEXT NOT NULL,
        fence_resource VARBINARY(256), fence_token BIGINT CHECK (fence_token > 0), fence_deleted BOOLEAN NOT NULL DEFAULT FALSE)`);
      return {
        port: server.port,
        address: (via) => ({ store: "mariadb", options: { ...server.options, port: via ?? server.port }, table: TABLE }),
        async read(_resource, id) {
          const [rows] = await db.query<mysql.RowDataPacket[]>(
            `SELECT body, CAST(fence_resource AS CHAR) AS fence_resource, CAST(fence_token AS CHAR) AS fence_token, fence_deleted FROM ${TABLE} WHERE id = ?`,
            [id],
          );
          const r = rows[0];
          return r && !r.fence_deleted ? { value: r.body, resource: r.fence_resource, fence: r.fence_token } : undefined;
        },
        async destroy() {
          await db.end();
          await server.destroy();
        },
      };
    },
  },
  {
    title: "Redis",
    id: (resource, n) => `order:${resourceTag(resource)}:${n}`,
    fencePerResource: true,
    more: ["hset", "multi"],
    bare: false,
    async start() {
      const server = await startRedis();
      const port = server.ports[0];
      const r = new Redis({ host: server.host, port, maxRetriesPerRequest: 1 });
      return {
        port,
        address: (via) => ({ store: "redis", host: server.host, port: via ?? port }),
        async read(resource, key) {
          const [value, fence] = await Promise.all([r.get(key), r.get(fenceKey(resource))]);
          return value === null || fence === null ? undefined : { value, resource, fence };
        },
        async destroy() {
          await r.quit();
          await server.destroy();
        },
      };
    },
  },
];
