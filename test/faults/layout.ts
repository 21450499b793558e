// The checker's own reading of etcd: which key under the servers' prefix is which, and what its value
// says, written from the documented layout (the comment at the top of server/etcd/keys.ts, and the value
// formats beside it) without importing the server's code. A bug in the server's layout or its decoders
// is then not shared by the judge: a key the server writes elsewhere, or a value in another format, is
// one this file does not recognise, and the checker reports it (property "layout").
//
//   P r/<resource, URI-encoded>/owner        exclusive holder; JSON head {"holder","nonce",...} then
//                                             optionally a newline and a published value; create revision
//                                             = generation, lease = the acquisition's lease
//   P r/R/owner-delay                        lock-delay: {"seconds": n}
//   P r/R/q/<16 hex><nonce>                  exclusive waiter: {"holder": ...}
//   P r/R/q/s/<16 hex><nonce>                shared waiter
//   P r/R/s/<16 hex>                         shared holder (same value as an owner key)
//   P r/R/issued                             rewritten by every grant (value not read)
//   P r/R/fence                              greatest generation accepted, 20 decimal digits
//   P r/R/d/<key>                            the fenced store's values
//   P r/R/usage                              bytes of R's entries, decimal; with authentication, then a
//                                             space and the payer's tag (16 hex)
//   P i/<64 hex>                             idempotency record (sha-256 of the key, without authentication)
//   P x/<16 hex>                             a preempted lease's record (attached to it)
//   P u/<16 hex>                             the bytes a lease's acquisitions store (attached to it)
//   P w/<16 hex>                             the store bytes charged to a principal, decimal
//   P s/<16 hex>  P k/signing  P k/public/<id>  P b/<16 hex>  P p/<16 hex>/<16 hex>  P c/<16 hex>/<8 hex>
import { createHash } from "node:crypto";

export type ResourceKeyKind = "owner" | "owner-delay" | "line" | "shared-line" | "shared" | "issued" | "fence" | "data" | "usage";

export type ParsedKey =
  | { scope: "resource"; resource: string; kind: ResourceKeyKind; /** data: the store key; line and shared: the lease id, hex */ rest?: string }
  | { scope: "idempotency"; hash: string }
  | { scope: "other"; kind: "session" | "signing" | "public" | "binding" | "principal" | "cap" | "sentinel" | "preempted" | "lease-bytes" | "caller-store" };

const HEX16 = "[0-9a-f]{16}";
const RESOURCE_KEY = new RegExp(`^r/([^/]*)/(?:(owner)|(owner-delay)|(issued)|(fence)|(usage)|q/s/(${HEX16}).*|q/(${HEX16}).*|s/(${HEX16})|d/(.*))$`, "s");
const OTHER: [RegExp, Extract<ParsedKey, { scope: "other" }>["kind"]][] = [
  [new RegExp(`^s/${HEX16}$`), "session"],
  [/^k\/signing$/, "signing"],
  [/^k\/public\/.+$/, "public"],
  [new RegExp(`^b/${HEX16}$`), "binding"],
  [new RegExp(`^p/${HEX16}/${HEX16}$`), "principal"],
  [new RegExp(`^c/${HEX16}/[0-9a-f]{8}$`), "cap"],
  [new RegExp(`^x/${HEX16}$`), "preempted"],
  [new RegExp(`^u/${HEX16}$`), "lease-bytes"],
  [new RegExp(`^w/${HEX16}$`), "caller-store"],
  [/^~end-of-history$/, "sentinel"],
];

export class Layout {
  constructor(readonly prefix: string) {}

  /** What a key under the prefix is; undefined for a key the documented layout does not describe. */
  parse(key: Buffer): ParsedKey | undefined {
    const text = key.toString("utf8");
    if (!text.startsWith(this.prefix)) return undefined;
    const rest = text.slice(this.prefix.length);
    const m = RESOURCE_KEY.exec(rest);
    if (m) {
      let resource: string;
      try {
        resource = decodeURIComponent(m[1]);
      } catch {
        return undefined;
      }
      if (encodeURIComponent(resource) !== m[1]) return undefined;
      const kinds: [number, ResourceKeyKind][] = [[2, "owner"], [3, "owner-delay"], [4, "issued"], [5, "fence"], [6, "usage"], [7, "shared-line"], [8, "line"], [9, "shared"], [10, "data"]];
      for (const [i, kind] of kinds) if (m[i] !== undefined) return { scope: "resource", resource, kind, ...(i >= 7 ? { rest: m[i] } : {}) };
    }
    const idem = /^i\/([0-9a-f]{64})$/.exec(rest);
    if (idem) return { scope: "idempotency", hash: idem[1] };
    for (const [re, kind] of OTHER) if (re.test(rest)) return { scope: "other", kind };
    return undefined;
  }

  ownerKey(resource: string): string {
    return `${this.prefix}r/${encodeURIComponent(resource)}/owner`;
  }
}

/** A fence value: exactly 20 decimal digits; undefined for anything else. */
export function decodeFence(value: Buffer): bigint | undefined {
  const s = value.toString("latin1");
  return /^\d{20}$/.test(s) ? BigInt(s) : undefined;
}

export interface HolderValue {
  holder: string;
  nonce?: string;
  principal?: string;
  maxHolders?: number;
}

/**
 * An owner key's (or a shared holder's) value: a JSON object with a string "holder" and a string "nonce",
 * then optionally a newline and the published value. A waiter's value (line keys) has no nonce. undefined
 * for anything else.
 */
export function decodeHolderValue(value: Buffer, withNonce: boolean): HolderValue | undefined {
  const nl = value.indexOf(0x0a);
  const head = (nl < 0 ? value : value.subarray(0, nl)).toString("utf8");
  let v: unknown;
  try {
    v = JSON.parse(head);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.holder !== "string") return undefined;
  if (withNonce && typeof o.nonce !== "string") return undefined;
  if (o.maxHolders !== undefined && !(typeof o.maxHolders === "number" && Number.isInteger(o.maxHolders) && o.maxHolders > 0)) return undefined;
  return { holder: o.holder, ...(typeof o.nonce === "string" ? { nonce: o.nonce } : {}), ...(typeof o.principal === "string" ? { principal: o.principal } : {}), ...(typeof o.maxHolders === "number" ? { maxHolders: o.maxHolders } : {}) };
}

/** The value an owner key (or a shared holder's) publishes: what follows its first newline; "" without one. */
export function publishedValue(value: Buffer): string {
  const nl = value.indexOf(0x0a);
  return nl < 0 ? "" : value.subarray(nl + 1).toString("utf8");
}

/** Where an idempotency key's record lives, without authentication: the hex sha-256 of the key. */
export const idempotencyHash = (key: string) => createHash("sha256").update(key, "utf8").digest("hex");
