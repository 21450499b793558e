// Pages of a Range: a cursor that continues a listing at its snapshot, and the bound on a page's bytes
// (the answer budget, answers/budget.ts).
import { invalid } from "../errors/errors.js";

/** An entry's bytes in an answer besides its key and value: its mod revision and the framing. */
export const ENTRY_OVERHEAD = 24;

export interface Cursor {
  resource: string;
  prefix: string;
  /** The etcd revision of the listing's snapshot. */
  revision: bigint;
  /** The last key of the previous page. */
  after: string;
}

const MAX_REVISION = 2n ** 63n - 1n;

export function encodePageToken(c: Cursor): string {
  return Buffer.from(JSON.stringify({ r: c.resource, p: c.prefix, v: c.revision.toString(), a: c.after })).toString("base64url");
}

export function decodePageToken(token: string, resource: string, prefix: string): Cursor {
  const malformed = () => invalid("page_token is malformed; pass the next_page_token of the previous page unchanged");
  let c: { r?: unknown; p?: unknown; v?: unknown; a?: unknown };
  try {
    c = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw malformed();
  }
  if (typeof c !== "object" || c === null) throw malformed();
  if (typeof c.r !== "string" || typeof c.p !== "string" || typeof c.v !== "string" || typeof c.a !== "string" || !/^\d{1,20}$/.test(c.v)) {
    throw malformed();
  }
  const revision = BigInt(c.v);
  if (revision < 1n || revision > MAX_REVISION) throw malformed();
  if (c.r !== resource || c.p !== prefix) {
    throw invalid("page_token belongs to another listing; use it with the same resource and prefix");
  }
  return { resource: c.r, prefix: c.p, revision, after: c.a };
}

/** How many of the entries fit one page: at least one, and no more than maxBytes of them. */
export function fitting(sizes: number[], maxBytes: number): number {
  let bytes = 0;
  for (let i = 0; i < sizes.length; i++) {
    bytes += sizes[i];
    if (bytes > maxBytes) return Math.max(1, i);
  }
  return sizes.length;
}
