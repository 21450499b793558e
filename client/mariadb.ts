// Fencing your own MariaDB or MySQL table (docs/mariadb.md): the PostgreSQL recipe (client/postgres.ts)
// with what MySQL's dialect forces. A protected row carries `fence_resource` and `fence_token`; every write
// is one statement whose WHERE holds the check, so check and write are atomic without a lock held across
// calls, and the affected-row count says whether it applied; when it did not, one locking read tells why.
// What differs from PostgreSQL:
// - No RETURNING on UPDATE (and none at all before MariaDB 10.5 or in MySQL): an applied write's fence is
//   the token's generation, which the statement wrote.
// - Affected rows count changed rows unless the connection has CLIENT_FOUND_ROWS (mysql2 sets it by
//   default). The helpers work either way: a delete and a revival always change the row (fence_deleted
//   flips), and an update that changed nothing is told from a refused one by the read after it.
// - An insert is a plain INSERT, and a fenced UPDATE of the tombstone when the key is taken. Not
//   INSERT ... ON DUPLICATE KEY UPDATE: with CLIENT_FOUND_ROWS its count is 1 both for "inserted" and for
//   "the row was there and the fence kept it unchanged", so a refused insert would read as applied.
// - Generations go in as strings through CAST(? AS SIGNED) and come out through CAST(... AS CHAR): MySQL's
//   documented rule compares a number with a string as doubles (MariaDB 10.11 happens to convert such a
//   parameter exactly; the CAST does not rely on it), and mysql2 reads BIGINT as a JavaScript number;
//   either would lose generations past 2^53.
// - The resource is compared as bytes (CAST(? AS BINARY), a VARBINARY column): MySQL's default collations
//   ignore case and trailing spaces, which would make "Orders" and "orders " the same resource.
// The helpers take anything with mysql2/promise's execute() (a Pool, a Connection, a PoolConnection inside
// the caller's transaction), so a fenced write can be one statement of a larger transaction.
import type { FenceStore, FenceVerdict } from "./fence-store.js";
import type { Token } from "./token.js";
import { checkWriterToken, type FencedOutcome, type TokenCheck } from "./fenced-write.js";

/**
 * What the helpers need of mysql2/promise: Pool, PoolConnection and Connection all have it. The first
 * element of the answer is a ResultSetHeader ({ affectedRows, insertId }) for a write, the rows for a SELECT.
 */
export interface Executable {
  execute(sql: string, values?: any[]): Promise<[any, any]>;
}

/** The fence columns the helpers read and write. */
export const FENCE_COLUMNS = ["fence_resource", "fence_token", "fence_deleted"] as const;

interface Target {
  /** The table; a [database, table] pair for a qualified one. Quoted as given. */
  table: string | readonly [string, string];
  /** The row's key. Its column must be the table's primary key or unique (inserts rely on the duplicate-key error). */
  id: unknown;
  /** The key column; default "id". */
  idColumn?: string;
  /** The holder's token: its resource guards the row, its generation is compared with the row's fence. */
  token: Token;
}


export type FencedTarget = Target & TokenCheck;

export type FencedWrite = FencedTarget & {
  /** Column -> value. The fence columns are the helper's and may not be set here. */
  set: Readonly<Record<string, unknown>>;
};

export type { FencedOutcome };

/**
 * The DDL that adds the fence columns to an existing table (run it once: MySQL has no ADD COLUMN IF NOT
 * EXISTS). The resource is VARBINARY, compared byte for byte; resource names are at most 256 bytes.
 * Existing rows keep NULL in both fence columns: the first fenced write of any resource claims such a row.
 */
export function fenceColumnsDdl(table: FencedTarget["table"]): string {
  return (
    `ALTER TABLE ${qualified(table)} ` +
    `ADD COLUMN fence_resource VARBINARY(256) NULL, ` +
    `ADD COLUMN fence_token BIGINT NULL CHECK (fence_token > 0), ` +
    `ADD COLUMN fence_deleted BOOLEAN NOT NULL DEFAULT FALSE`
  );
}

/** Updates a live row if no newer generation of the token's resource has written it. */
export async function fencedUpdate(db: Executable, w: FencedWrite): Promise<FencedOutcome> {
  const refused = checkToken(w);
  if (refused) return refused;
  const cols = setColumns(w.set);
  const t = w.token;
  const sql =
    `UPDATE ${qualified(w.table)} SET ${[...cols.map((c) => `${ident(c)} = ?`), "fence_resource = CAST(? AS BINARY)", "fence_token = CAST(? AS SIGNED)"].join(", ")} ` +
    `WHERE ${ident(w.idColumn ?? "id")} = ? AND NOT fence_deleted AND ${FENCE_CHECK}`;
  const params = [...cols.map((c) => w.set[c]), t.resource, String(t.generation), w.id, ...checkParams(t)];
  return writeOrExplain(db, w, "update", async () => affected(await db.execute(sql, params)));
}

/**
 * Inserts a row, or revives its tombstone if no newer generation deleted it. A live row already there is
 * left alone ("exists", or "stale" when a newer generation wrote it). Reviving sets the columns given and
 * the fence; columns not given keep the deleted row's values, so give every column that matters.
 */
export async function fencedInsert(db: Executable, w: FencedWrite): Promise<FencedOutcome> {
  const refused = checkToken(w);
  if (refused) return refused;
  const cols = setColumns(w.set);
  const t = w.token;
  const idColumn = ident(w.idColumn ?? "id");
  const table = qualified(w.table);
  const values = cols.map((c) => w.set[c]);
  const insert =
    `INSERT INTO ${table} (${[idColumn, ...cols.map(ident), "fence_resource", "fence_token", "fence_deleted"].join(", ")}) ` +
    `VALUES (${["?", ...cols.map(() => "?"), "CAST(? AS BINARY)", "CAST(? AS SIGNED)", "FALSE"].join(", ")})`;
  // A tombstone is revived by the same fenced UPDATE as a live row is written, with the opposite
  // fence_deleted in its WHERE: it always changes the row, so its count is right with or without
  // CLIENT_FOUND_ROWS.
  const revive =
    `UPDATE ${table} SET ${[...cols.map((c) => `${ident(c)} = ?`), "fence_resource = CAST(? AS BINARY)", "fence_token = CAST(? AS SIGNED)", "fence_deleted = FALSE"].join(", ")} ` +
    `WHERE ${idColumn} = ? AND fence_deleted AND ${FENCE_CHECK}`;
  return writeOrExplain(db, w, "insert", async () => {
    try {
      // A concurrent insert of the same key that has not committed makes this one wait for it, then fail
      // with the duplicate-key error (or succeed, if it rolled back): an insert never overwrites a live row.
      await db.execute(insert, [w.id, ...values, t.resource, String(t.generation)]);
      return 1;
    } catch (err) {
      if ((err as { errno?: number }).errno !== ER_DUP_ENTRY) throw err;
      const n = affected(await db.execute(revive, [...values, t.resource, String(t.generation), w.id, ...checkParams(t)]));
      if (n > 0) return n;
      // The read below finds no row with this id: the duplicate is in another unique key.
      return { duplicate: err };
    }
  });
}

/** Deletes a live row by turning it into a tombstone that keeps the deleting generation as its fence. */
export async function fencedDelete(db: Executable, w: FencedTarget): Promise<FencedOutcome> {
  const refused = checkToken(w);
  if (refused) return refused;
  const t = w.token;
  const sql =
    `UPDATE ${qualified(w.table)} SET fence_deleted = TRUE, fence_resource = CAST(? AS BINARY), fence_token = CAST(? AS SIGNED) ` +
    `WHERE ${ident(w.idColumn ?? "id")} = ? AND NOT fence_deleted AND ${FENCE_CHECK}`;
  const params = [t.resource, String(t.generation), w.id, ...checkParams(t)];
  return writeOrExplain(db, w, "delete", async () => affected(await db.execute(sql, params)));
}

const ER_DUP_ENTRY = 1062;

/**
 * The check itself, on the row's columns, with the token's resource and generation as parameters
 * (checkParams): the same resource, and no newer generation has written. `<=`, not `<`: the holder of a
 * generation may write the same row many times. NULL in both columns is a row never fenced (legacy).
 * It is in the WHERE of a single UPDATE, which InnoDB evaluates on the newest committed version of the row
 * under the row's exclusive lock whatever the isolation level (a "locking read"), so no concurrent writer
 * can slip between check and write.
 */
const FENCE_CHECK =
  "((fence_resource = CAST(? AS BINARY) AND fence_token <= CAST(? AS SIGNED)) OR (fence_resource IS NULL AND fence_token IS NULL))";
const checkParams = (t: Token) => [t.resource, String(t.generation)];

/** The affected-row count of a write's answer ([ResultSetHeader, undefined] from mysql2/promise). */
function affected([header]: [any, any]): number {
  const n = header?.affectedRows;
  if (typeof n !== "number") throw new TypeError("the driver's answer to a write has no affectedRows: pass a mysql2/promise Pool or Connection");
  return n;
}

type Row = { fence_resource: string | null; fence_token: string | null; fence_deleted: boolean };

/**
 * Runs the write; when it touched no row, reads the row to say why. Between the two statements another
 * writer may have changed the row: if the row now looks writable, the write is tried again, a few times at
 * most, so that the outcome always describes a real refusal.
 */
async function writeOrExplain(
  db: Executable,
  w: FencedTarget,
  kind: "update" | "insert" | "delete",
  write: () => Promise<number | { duplicate: unknown }>,
): Promise<FencedOutcome> {
  const { resource, generation } = w.token;
  for (let attempt = 1; ; attempt++) {
    const n = await write();
    if (typeof n === "number" && n > 0) return { status: "applied", fence: generation };
    // A locking read: inside the caller's REPEATABLE READ transaction a plain SELECT would read the
    // transaction's snapshot, older than the row the UPDATE saw.
    const [rows] = await db.execute(
      `SELECT fence_resource, CAST(fence_token AS CHAR) AS fence_token, fence_deleted FROM ${qualified(w.table)} WHERE ${ident(w.idColumn ?? "id")} = ? LOCK IN SHARE MODE`,
      [w.id],
    );
    const raw = (rows as any[])[0];
    if (typeof n !== "number" && !raw) throw n.duplicate;
    const row: Row | undefined = raw && {
      fence_resource: raw.fence_resource === null ? null : Buffer.isBuffer(raw.fence_resource) ? raw.fence_resource.toString("utf8") : String(raw.fence_resource),
      fence_token: raw.fence_token,
      fence_deleted: Boolean(Number(raw.fence_deleted)),
    };
    // Without CLIENT_FOUND_ROWS an update that sets the values the row already has affects 0 rows. If the
    // row is live at this very generation, the write is tried again; still 0 and still so, it did match:
    // the row holds this generation's values, which is what applied means.
    if (kind === "update" && attempt > 1 && row && !row.fence_deleted && row.fence_resource === resource && row.fence_token === String(generation)) {
      return { status: "applied", fence: generation };
    }
    const why = explain(kind, row, resource, generation);
    if (why) return why;
    if (attempt === 3) throw new Error(`fenced ${kind} of ${String(w.id)}: the row kept changing under the write; try again`);
  }
}

/** Why a write of this kind did not apply to this row; undefined when the row now looks writable. */
function explain(kind: "update" | "insert" | "delete", row: Row | undefined, resource: string, generation: bigint): FencedOutcome | undefined {
  if (!row) return kind === "insert" ? undefined : { status: "notFound" };
  if (row.fence_resource !== null && row.fence_resource !== resource) return { status: "otherResource", resource: row.fence_resource };
  const fence = row.fence_token === null ? null : BigInt(row.fence_token);
  if (fence !== null && fence > generation) return { status: "stale", fence };
  if (kind === "insert") return row.fence_deleted ? undefined : { status: "exists", fence };
  return row.fence_deleted ? { status: "notFound" } : undefined;
}

function checkToken(w: FencedTarget): FencedOutcome | undefined {
  return checkWriterToken(w, "row");
}

function setColumns(set: Readonly<Record<string, unknown>>): string[] {
  const cols = Object.keys(set);
  const fenced = cols.find((c) => (FENCE_COLUMNS as readonly string[]).includes(c));
  if (fenced) throw new RangeError(`"${fenced}" is a fence column: the helper writes it, a caller may not set it`);
  return cols;
}

/** A quoted identifier: the name exactly as given, whatever characters it has. */
function ident(name: string): string {
  return "`" + name.replaceAll("`", "``") + "`";
}

function qualified(table: FencedTarget["table"]): string {
  return typeof table === "string" ? ident(table) : `${ident(table[0])}.${ident(table[1])}`;
}

// ---- The fence store of a fenced endpoint (client/fence-store.ts) ----

/** The fence table of mariadbFenceStore: one row per resource, its greatest admitted generation. */
export function fenceTableDdl(table: FencedTarget["table"] = "fencekeeper_fences"): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(table)} (resource VARBINARY(256) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL CHECK (fence > 0))`;
}

/**
 * A FenceStore on a MariaDB or MySQL table (create it with fenceTableDdl()). One statement per admit:
 *   INSERT ... ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence, gen))
 * The row is locked and read at its newest version by the statement itself, and the answer's insert id
 * carries the fence it leaves: 0 when the row was inserted (the table has no AUTO_INCREMENT column), the
 * resource's fence otherwise, whatever CLIENT_FOUND_ROWS says of the affected rows. It also sets the
 * connection's LAST_INSERT_ID() to that fence.
 */
export function mariadbFenceStore(db: Executable, options: { table?: FencedTarget["table"] } = {}): FenceStore {
  const table = qualified(options.table ?? "fencekeeper_fences");
  const sql =
    `INSERT INTO ${table} (resource, fence) VALUES (CAST(? AS BINARY), CAST(? AS SIGNED)) ` +
    `ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence, CAST(? AS SIGNED)))`;
  return {
    async admit(resource: string, generation: bigint): Promise<FenceVerdict> {
      if (typeof generation !== "bigint" || generation < 1n) throw new RangeError(`generation ${String(generation)} is not a token's generation (an integer from 1)`);
      const [header] = await db.execute(sql, [resource, String(generation), String(generation)]);
      let fence = insertId(header?.insertId);
      if (fence === undefined) {
        // An insert id past 2^53 as a JavaScript number has lost digits: read the fence exactly.
        const [rows] = await db.execute(`SELECT CAST(fence AS CHAR) AS fence FROM ${table} WHERE resource = CAST(? AS BINARY) LOCK IN SHARE MODE`, [resource]);
        fence = BigInt((rows as any[])[0].fence);
      }
      if (fence === 0n || fence === generation) return { status: "admitted", fence: generation };
      return { status: "stale", fence };
    },
  };
}

/** The insert id as a bigint, or undefined when the driver gave it as an inexact number. */
function insertId(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v;
  if (typeof v === "string") return BigInt(v);
  if (typeof v === "number") return Number.isSafeInteger(v) ? BigInt(v) : undefined;
  throw new TypeError("the driver's answer to an insert has no insertId: pass a mysql2/promise Pool or Connection");
}
