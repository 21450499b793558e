// A FenceStore (client/fence-store.ts) in a PostgreSQL table of the service's own: one row per resource,
// its fence the greatest generation admitted. admit() is one INSERT ... ON CONFLICT DO UPDATE whose
// WHERE holds the check, so check and raise are atomic. Called with a client inside the caller's
// transaction, the row lock that statement takes is held until COMMIT: a concurrent admit of the same
// resource waits for it, which makes admit-then-write one step across every instance of the service
// (docs/fenced-http.md, "The race between admit and the write").
import type { FenceStore, FenceVerdict } from "./fence-store.js";
import type { Queryable } from "./postgres.js";

export interface PostgresFenceStoreOptions {
  /** The fence table; a [schema, table] pair for a schema-qualified one. Default "fencekeeper_fences". */
  table?: string | readonly [string, string];
}

/** The DDL of the fence table (run it once, in a migration). */
export function fenceTableDdl(table: NonNullable<PostgresFenceStoreOptions["table"]> = "fencekeeper_fences"): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(table)} (resource text PRIMARY KEY, fence bigint NOT NULL CHECK (fence > 0))`;
}

/**
 * A fence store on anything with pg's query(): a pg.Pool (each admit its own statement), or a
 * pg.PoolClient inside the caller's transaction (the admit holds the resource's row until COMMIT).
 */
export function postgresFenceStore(db: Queryable, o: PostgresFenceStoreOptions = {}): FenceStore {
  const table = qualified(o.table ?? "fencekeeper_fences");
  return {
    async admit(resource: string, generation: bigint): Promise<FenceVerdict> {
      if (generation <= 0n) throw new RangeError(`generation must be positive, got ${generation}`);
      // `<=`: the holder of a generation is admitted as often as it writes.
      const raised = await db.query(
        `INSERT INTO ${table} AS f (resource, fence) VALUES ($1, $2) ` +
          `ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence RETURNING fence`,
        [resource, String(generation)],
      );
      if (raised.rowCount) return { status: "admitted", fence: BigInt(raised.rows[0].fence) };
      // Refused: the row holds a greater fence, and fences only grow, so this read sees one at least as great.
      const found = await db.query(`SELECT fence FROM ${table} WHERE resource = $1`, [resource]);
      if (!found.rows.length) throw new Error(`fence of "${resource}" refused ${generation} and then vanished: was the fence table emptied?`);
      return { status: "stale", fence: BigInt(found.rows[0].fence) };
    },
  };
}

function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function qualified(table: NonNullable<PostgresFenceStoreOptions["table"]>): string {
  return typeof table === "string" ? ident(table) : `${ident(table[0])}.${ident(table[1])}`;
}
