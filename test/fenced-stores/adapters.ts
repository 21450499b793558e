// How each store fencekeeper ships a fencing helper for is written: PostgreSQL, MariaDB and Redis, in one
// shape, so that one suite (test/fenced-stores/timeline.test.ts) and one holder program
// (test/fenced-stores/holder.ts) serve all three. Each adapter writes through the store's own helper in
// client/, on one connection of its own; `bare` is the recipe's write by hand, without the helper, where
// the store's recipe has one.
import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import pg from "pg";
import type { FencedOutcome, Token, TokenKey } from "../../client/index.js";
import * as mariadb from "../../client/mariadb.js";
import * as postgres from "../../client/postgres.js";
import * as redis from "../../client/redis.js";

/** Where a store listens, as the holder program gets it on its command line (JSON). */
export type StoreAddress =
  | { store: "postgres"; url: string; table: string }
  | { store: "mariadb"; options: { host: string; port: number; user: string; database: string }; table: string }
  | { store: "redis"; host: string; port: number };

/** The server's token keys, or none: a helper given neither keys nor `unverified: true` must throw. */
export type Keys = TokenKey[] | undefined;

type Write = (token: Token, id: string, value: string, keys: Keys) => Promise<FencedOutcome>;

export interface FencedWrites {
  /** Writes a new row or key; one that is live is not overwritten. */
  insert: Write;
  /** Writes over what is there. */
  update: Write;
  delete(token: Token, id: string, keys: Keys): Promise<FencedOutcome>;
  /** The writes only this store has (Redis: HSET, a multi-key script), by name. */
  more: Record<string, Write>;
  /** The recipe's conditional UPDATE by hand, without the helper: how many rows it changed. */
  bare?: (token: Token, id: string, value: string) => Promise<number>;
  close(): Promise<void>;
}

const check = (keys: Keys) => (keys ? { keys } : {}) as { keys: TokenKey[] };

export function connect(a: StoreAddress): FencedWrites {
  switch (a.store) {
    case "postgres": {
      // One connection, never closed for idling: what it sends is what the suite counts.
      const db = new pg.Pool({ connectionString: a.url, max: 1, idleTimeoutMillis: 0 });
      const { table } = a;
      return {
        insert: (token, id, value, keys) => postgres.fencedInsert(db, { table, id, token, ...check(keys), set: { body: value } }),
        update: (token, id, value, keys) => postgres.fencedUpdate(db, { table, id, token, ...check(keys), set: { body: value } }),
        delete: (token, id, keys) => postgres.fencedDelete(db, { table, id, token, ...check(keys) }),
        more: {},
        bare: async (t, id, value) =>
          (
            await db.query(`UPDATE ${table} SET body = $3, fence_token = $4 WHERE id = $1 AND fence_resource = $2 AND fence_token <= $4`, [
              id,
              t.resource,
              value,
              String(t.generation),
            ])
          ).rowCount ?? 0,
        close: () => db.end(),
      };
    }
    case "mariadb": {
      const db = mysql.createPool({ ...a.options, connectionLimit: 1, maxIdle: 1, idleTimeout: 24 * 3600_000 });
      const { table } = a;
      return {
        insert: (token, id, value, keys) => mariadb.fencedInsert(db, { table, id, token, ...check(keys), set: { body: value } }),
        update: (token, id, value, keys) => mariadb.fencedUpdate(db, { table, id, token, ...check(keys), set: { body: value } }),
        delete: (token, id, keys) => mariadb.fencedDelete(db, { table, id, token, ...check(keys) }),
        more: {},
        bare: async (t, id, value) => {
          const [res] = await db.execute<mysql.ResultSetHeader>(
            `UPDATE ${table} SET body = ?, fence_token = CAST(? AS SIGNED) WHERE id = ? AND fence_resource = CAST(? AS BINARY) AND fence_token <= CAST(? AS SIGNED)`,
            [value, String(t.generation), id, t.resource, String(t.generation)],
          );
          return res.affectedRows;
        },
        close: () => db.end(),
      };
    }
    case "redis": {
      const r = new Redis({ host: a.host, port: a.port, maxRetriesPerRequest: 1 });
      return {
        insert: (token, key, value, keys) => redis.fencedSet(r, { key, value, when: "ifMissing", token, ...check(keys) }),
        update: (token, key, value, keys) => redis.fencedSet(r, { key, value, token, ...check(keys) }),
        delete: (token, key, keys) => redis.fencedDel(r, { key, token, ...check(keys) }),
        more: {
          hset: (token, key, value, keys) => redis.fencedHset(r, { key: `${key}:h`, fields: { f: value }, token, ...check(keys) }),
          multi: (token, key, value, keys) => redis.fencedMulti(r, { ops: [{ set: key, value }, { hset: `${key}:h`, fields: { f: value } }], token, ...check(keys) }),
        },
        close: async () => void (await r.quit()),
      };
    }
  }
}
