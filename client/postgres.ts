// Fencing your own PostgreSQL table (docs/postgres.md). A protected row carries the fence of the resource
// that guards it: `fence_resource` (whose generations these are) and `fence_token` (the greatest
// generation that wrote it). Every write is one statement whose WHERE holds the check, so the check and
// the write are atomic without a lock held across calls:
//   UPDATE t SET ..., fence_token = $gen WHERE id = $id AND fence_resource = $resource AND fence_token <= $gen
// and the affected-row count says whether it applied. When it did not, one read tells why: the row is
// missing, a newer generation has written it (its fence is returned), or another resource guards it.
// A delete leaves a tombstone (fence_deleted) that keeps its fence, so a stale holder cannot insert the
// row back. The helpers take anything with pg's query() (a Pool, a Client, a PoolClient inside the
// caller's transaction), so a fenced write can be one statement of a larger transaction.
import type { Token } from "./token.js";
import { checkWriterToken, type FencedOutcome, type TokenCheck } from "./fenced-write.js";

/** What the helpers need of node-postgres: pg.Pool, pg.Client and pg.PoolClient all have it. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null; rows: any[] }>;
}

/** The fence columns the helpers read and write. */
export const FENCE_COLUMNS = ["fence_resource", "fence_token", "fence_deleted"] as const;

interface Target {
  /** The table; a [schema, table] pair for a schema-qualified one. Quoted as given. */
  table: string | readonly [string, string];
  /** The row's key. Its column must be the table's primary key or unique (inserts rely on ON CONFLICT). */
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
 * The DDL that adds the fence columns to an existing table. Existing rows keep NULL in both fence
 * columns: the first fenced write of any resource claims such a row (docs/postgres.md, "Legacy rows").
 */
export function fenceColumnsDdl(table: FencedTarget["table"]): string {
  return (
    `ALTER TABLE ${qualified(table)} ` +
    `ADD COLUMN IF NOT EXISTS fence_resource text, ` +
    `ADD COLUMN IF NOT EXISTS fence_token bigint CHECK (fence_token > 0), ` +
    `ADD COLUMN IF NOT EXISTS fence_deleted boolean NOT NULL DEFAULT false`
  );
}

/** Updates a live row if no newer generation of the token's resource has written it. */
export async function fencedUpdate(db: Queryable, w: FencedWrite): Promise<FencedOutcome> {
  const refused = checkToken(w);
  if (refused) return refused;
  const cols = setColumns(w.set);
  const sql =
    `UPDATE ${qualified(w.table)} SET ${[...cols.map((c, i) => `${ident(c)} = $${i + 4}`), "fence_resource = $2", "fence_token = $3"].join(", ")} ` +
    `WHERE ${ident(w.idColumn ?? "id")} = $1 AND NOT fence_deleted AND ${fenceCheck("")} RETURNING fence_token`;
  return writeOrExplain(db, w, "update", sql, [w.id, w.token.resource, String(w.token.generation), ...cols.map((c) => w.set[c])]);
}

/**
 * Inserts a row, or revives its tombstone if no newer generation deleted it. A live row already there
 * is left alone ("exists", or "stale" when a newer generation wrote it). Reviving sets the columns given
 * and the fence; columns not given keep the deleted row's values, so give every column that matters.
 */
export async function fencedInsert(db: Queryable, w: FencedWrite): Promise<FencedOutcome> {
  const refused = checkToken(w);
  if (refused) return refused;
  const cols = setColumns(w.set);
  const idColumn = ident(w.idColumn ?? "id");
  const table = qualified(w.table);
  const all = [idColumn, ...cols.map(ident), "fence_resource", "fence_token", "fence_deleted"];
  const values = ["$1", ...cols.map((_, i) => `$${i + 4}`), "$2", "$3", "false"];
  const revive = [...cols.map(ident), "fence_resource", "fence_token", "fence_deleted"].map((c) => `${c} = EXCLUDED.${c}`);
  // ON CONFLICT makes insert-against-insert safe: the second waits for the first to commit, then takes
  // the DO UPDATE path, whose WHERE lets it revive a tombstone only (never overwrite a live row).
  const sql =
    `INSERT INTO ${table} AS t (${all.join(", ")}) VALUES (${values.join(", ")}) ` +
    `ON CONFLICT (${idColumn}) DO UPDATE SET ${revive.join(", ")} ` +
    `WHERE t.fence_deleted AND ${fenceCheck("t.")} RETURNING fence_token`;
  return writeOrExplain(db, w, "insert", sql, [w.id, w.token.resource, String(w.token.generation), ...cols.map((c) => w.set[c])]);
}

/** Deletes a live row by turning it into a tombstone that keeps the deleting generation as its fence. */
export async function fencedDelete(db: Queryable, w: FencedTarget): Promise<FencedOutcome> {
  const refused = checkToken(w);
  if (refused) return refused;
  const sql =
    `UPDATE ${qualified(w.table)} SET fence_deleted = true, fence_resource = $2, fence_token = $3 ` +
    `WHERE ${ident(w.idColumn ?? "id")} = $1 AND NOT fence_deleted AND ${fenceCheck("")} RETURNING fence_token`;
  return writeOrExplain(db, w, "delete", sql, [w.id, w.token.resource, String(w.token.generation)]);
}

/**
 * The check itself, on the row's columns (prefixed by `row`), with $2 the token's resource and $3 its
 * generation: the same resource, and no newer generation has written. `<=`, not `<`: the holder of a
 * generation may write the same row many times. NULL in both columns is a row never fenced (legacy).
 */
function fenceCheck(row: "" | "t."): string {
  return `((${row}fence_resource = $2 AND ${row}fence_token <= $3) OR (${row}fence_resource IS NULL AND ${row}fence_token IS NULL))`;
}

/**
 * Runs the write; when it touched no row, reads the row to say why. Between the two statements another
 * writer may have changed the row (deleted it, or revived a tombstone): if the row now looks writable,
 * the write is tried again, a few times at most, so that the outcome always describes a real refusal.
 */
async function writeOrExplain(db: Queryable, w: FencedTarget, kind: "update" | "insert" | "delete", sql: string, params: unknown[]): Promise<FencedOutcome> {
  const generation = w.token.generation;
  for (let attempt = 1; ; attempt++) {
    const res = await db.query(sql, params);
    if (res.rowCount) return { status: "applied", fence: BigInt(res.rows[0].fence_token) };
    const found = await db.query(
      `SELECT fence_resource, fence_token, fence_deleted FROM ${qualified(w.table)} WHERE ${ident(w.idColumn ?? "id")} = $1`,
      [w.id],
    );
    const row = found.rows[0] as { fence_resource: string | null; fence_token: string | null; fence_deleted: boolean } | undefined;
    const why = explain(kind, row, w.token.resource, generation);
    if (why) return why;
    if (attempt === 3) throw new Error(`fenced ${kind} of ${String(w.id)}: the row kept changing under the write; try again`);
  }
}

/** Why a write of this kind did not apply to this row; undefined when the row now looks writable. */
function explain(
  kind: "update" | "insert" | "delete",
  row: { fence_resource: string | null; fence_token: string | null; fence_deleted: boolean } | undefined,
  resource: string,
  generation: bigint,
): FencedOutcome | undefined {
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

/** A quoted SQL identifier: the name exactly as given, whatever characters it has. */
function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function qualified(table: FencedTarget["table"]): string {
  return typeof table === "string" ? ident(table) : `${ident(table[0])}.${ident(table[1])}`;
}
