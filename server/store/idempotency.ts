// Idempotency records: what a mutation with an idempotency key did, kept so that a retry gets the first
// answer instead of applying again. A record is written in the same transaction as its mutation; its
// key is the caller's: with authentication on, the hash of the principal's name and the idempotency key,
// so that one principal can neither take a key another will use nor learn whether it used one; without
// authentication, every caller shares one anonymous scope (the hash of the key alone). Within a scope a
// key is one logical request wherever it is sent.
//
// Records expire with etcd leases. Rather than one lease per record, records written within the same
// hour share one lease that lasts the retention time plus that hour.
import { createHash } from "node:crypto";
import type { Leases } from "../etcd/leases.js";
import type { Mutation } from "./mutation.js";
import type { Token } from "../tokens/token.js";

const BUCKET_MS = 3600_000;

/**
 * Where a key's record lives. `principal` is the authenticated caller, undefined without authentication.
 * Principal names and keys hold no control characters, so the NUL between them cannot be forged, and an
 * anonymous key (no NUL) is never a principal's.
 */
export function hashKey(idempotencyKey: string, principal?: string): string {
  const h = createHash("sha256");
  if (principal !== undefined) h.update(`principal\u0000${principal}\u0000`, "utf8");
  return h.update(idempotencyKey, "utf8").digest("hex");
}

/** What makes two requests the same request: everything but the idempotency key itself. */
export function fingerprintOf(m: Mutation, token: Token): string {
  const h = createHash("sha256");
  h.update(JSON.stringify([m.resource, token.generation.toString(), token.leaseId.toString(), m.mode]));
  for (const o of m.ops) {
    h.update(JSON.stringify([o.kind, o.key, o.kind === "put" ? o.value.byteLength : -1]));
    if (o.kind === "put") h.update(o.value);
  }
  return h.digest("hex");
}

export class IdempotencyLeases {
  private readonly byBucket = new Map<number, Promise<bigint>>();

  constructor(
    private readonly leases: Leases,
    private readonly retentionSeconds: number,
  ) {}

  /** The lease for a record written now. */
  leaseForNow(now = Date.now()): Promise<bigint> {
    const bucket = Math.floor(now / BUCKET_MS);
    let lease = this.byBucket.get(bucket);
    if (!lease) {
      lease = this.leases.grant(this.retentionSeconds + BUCKET_MS / 1000).then((l) => l.id);
      lease.catch(() => this.byBucket.delete(bucket));
      this.byBucket.set(bucket, lease);
      for (const b of this.byBucket.keys()) if (b < bucket) this.byBucket.delete(b);
    }
    return lease;
  }

  /** Forgets a lease that etcd no longer has, so that the next record gets a fresh one. */
  async forget(lease: bigint): Promise<void> {
    for (const [bucket, p] of this.byBucket) {
      if ((await p.catch(() => undefined)) === lease) this.byBucket.delete(bucket);
    }
  }
}
