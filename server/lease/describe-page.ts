// Describe a page of holders at a time: a resource may have thousands of shared holders, each with a
// value of up to 1 MiB, and one answer must stay within the answer budget (answers/budget.ts). The
// holders are listed oldest generation first, as many as fit, at least one; the page token names the
// generation of the last one listed, and the next page starts after it. The exclusive holder, alone,
// is always listed whole.
import { invalid } from "../errors/errors.js";
import { holderBytes, STATE_OVERHEAD } from "../answers/budget.js";
import type { Owner } from "../etcd/keys.js";
import type { HolderState } from "./observe.js";

const TOKEN = /^h([0-9]{1,19})$/;

/** The generation after which a holders page starts; 0n for the first page. */
export function holdersAfter(token: string): bigint {
  if (token === "") return 0n;
  const m = TOKEN.exec(Buffer.from(token, "base64url").toString("latin1"));
  if (!m) throw invalid("holders_page_token is not one that Describe or ListResources gave; describe again without it");
  return BigInt(m[1]);
}

export function holdersPageToken(lastGeneration: bigint): string {
  return Buffer.from(`h${lastGeneration}`, "latin1").toString("base64url");
}

/**
 * The holders of one page: those after the generation `after`, oldest first, while the description
 * stays within maxBytes (at least one); more: whether holders were left for a next page.
 */
export function holdersPage<T extends { o: Owner; mode: "exclusive" | "shared" }>(resource: string, all: T[], after: bigint, maxBytes: number): { owners: T[]; more: boolean } {
  if (all.length === 1 && all[0].mode === "exclusive") return { owners: all, more: false };
  const rest = after > 0n ? all.filter(({ o }) => o.generation > after) : all;
  let left = maxBytes - STATE_OVERHEAD;
  let n = 0;
  for (; n < rest.length; n++) {
    const { o } = rest[n];
    const bytes = holderBytes(resource, { holder: o.holder, holderPrincipal: o.principal, value: o.value }, true);
    if (n > 0 && bytes > left) break;
    left -= bytes;
  }
  return { owners: rest.slice(0, n), more: n < rest.length };
}

/** A description's bytes in an answer, as an upper bound: each value once (answers/budget.ts). */
export function describedBytes(resource: string, d: { holders: HolderState[]; value?: Uint8Array }): number {
  let bytes = STATE_OVERHEAD + Buffer.byteLength(resource) + (d.value?.byteLength ?? 0);
  for (const h of d.holders) bytes += holderBytes(resource, h, d.value === undefined);
  return bytes;
}
