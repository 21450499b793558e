// Idempotency records: what a mutation with an idempotency key did, kept so that a retry gets the first
// answer instead of applying again. A record is written in the same transaction as its mutation.
//
// Records expire with etcd leases. Rather than one lease per record, records written within the same
// hour share one lease that lasts the retention time plus that hour.
import { createHash } from "node:crypto";
import type { IKeyValue } from "etcd3";
import type { Leases } from "../etcd/leases.js";

const BUCKET_MS = 3600_000;

export interface IdempotencyRecord {
  /** Hash of the request the key was first used with. */
  fingerprint: string;
  /** The fence the mutation set. */
  fence: bigint;
}

export function hashKey(idempotencyKey: string): string {
  return createHash("sha256").update(idempotencyKey, "utf8").digest("hex");
}

export function encodeRecord(r: IdempotencyRecord): Buffer {
  return Buffer.from(JSON.stringify({ fingerprint: r.fingerprint, fence: r.fence.toString() }));
}

export function decodeRecord(kv: IKeyValue): IdempotencyRecord & { revision: bigint } {
  const parsed = JSON.parse(kv.value.toString()) as { fingerprint: string; fence: string };
  // The record commits with its mutation, so its last write is the mutation's revision.
  return { fingerprint: parsed.fingerprint, fence: BigInt(parsed.fence), revision: BigInt(kv.mod_revision) };
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
  forget(lease: bigint): void {
    for (const [bucket, p] of this.byBucket) {
      p.then((id) => id === lease && this.byBucket.delete(bucket), () => undefined);
    }
  }
}
