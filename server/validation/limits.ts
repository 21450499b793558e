// The limits the service enforces, with their defaults. Configuration may change the adjustable ones.

export interface Limits {
  /** Smallest TTL etcd grants, in seconds (a request for 1 s is granted 2 s). */
  readonly minTtlSeconds: number;
  readonly maxTtlSeconds: number;
  readonly maxTxnOps: number;
  /** How long an idempotency record is kept, in seconds. */
  readonly idempotencyTtlSeconds: number;
  /** Leases (acquisitions of their own, and sessions) one principal may hold at once, with authentication on. */
  readonly maxLeasesPerCaller: number;
  /** The longest lock-delay an acquisition may ask for, in seconds (0: none may). */
  readonly maxLockDelaySeconds: number;
  /** Bytes (keys and values) one resource's store entries may take (0: no quota). */
  readonly maxBytesPerResource: number;
  /**
   * Bytes (keys and values) of the store entries one principal pays for, over all resources, with
   * authentication on and the quota on (store/store-payer.ts; 0: none).
   */
  readonly maxStoreBytesPerCaller: number;
  /** Bytes the acquisitions of one lease or session may store (server/budgets/lease-bytes.ts). */
  readonly maxBytesPerLease: number;
  /** Shortest time between two preemptions of one resource on a replica, in ms (0: none). */
  readonly preemptionIntervalMs: number;
}

export const MIN_TTL_SECONDS = 2;
export const MAX_RESOURCE_BYTES = 256;
export const MAX_KEY_BYTES = 1024;
export const MAX_VALUE_BYTES = 1024 * 1024;
export const MAX_TXN_VALUE_BYTES = 1024 * 1024;
export const MAX_HOLDER_BYTES = 256;
export const MAX_IDEMPOTENCY_KEY_BYTES = 256;
/** Operations a Txn's transaction has besides its own: the fence and the idempotency record. */
export const TXN_EXTRA_OPS = 2;
/** Writes in one Batch call, and their values in all: a batch fits common 4 MiB message limits. */
export const MAX_BATCH_WRITES = 1000;
export const MAX_BATCH_VALUE_BYTES = 2 * 1024 * 1024;
/**
 * With the quota on (--max-bytes-per-resource), its compares are the longest list: one per operation
 * (what it replaces has not changed), the fence's (up to 4 under FENCE_MODE_LIVE), the idempotency
 * record's and the usage key's.
 */
export const TXN_EXTRA_OPS_WITH_QUOTA = 6;
export const DEFAULT_MAX_BYTES_PER_RESOURCE = 64 * 1024 * 1024;
/** Room for one largest value (MAX_VALUE_BYTES) and about two thousand small acquisitions besides. */
export const DEFAULT_MAX_BYTES_PER_LEASE = 2 * 1024 * 1024;
/** One preemption of a resource a second: a takeover is for a holder that is gone, not a way to hold. */
export const DEFAULT_PREEMPTION_INTERVAL_MS = 1000;
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

export const DEFAULT_LIMITS: Limits = {
  minTtlSeconds: MIN_TTL_SECONDS,
  maxTtlSeconds: 300,
  maxTxnOps: 64,
  idempotencyTtlSeconds: 24 * 3600,
  maxLeasesPerCaller: 100_000,
  maxLockDelaySeconds: 60,
  maxBytesPerResource: DEFAULT_MAX_BYTES_PER_RESOURCE,
  maxStoreBytesPerCaller: 0,
  maxBytesPerLease: DEFAULT_MAX_BYTES_PER_LEASE,
  preemptionIntervalMs: DEFAULT_PREEMPTION_INTERVAL_MS,
};
/** Ops in one LeaseBatch call, and their values in all: the same bounds as a store Batch. */
export const MAX_LEASE_BATCH_OPS = 1000;
export const MAX_LEASE_BATCH_VALUE_BYTES = 2 * 1024 * 1024;
/** Resources in one AcquireAll call: each is acquired after the one before it, so a set is small. */
export const MAX_ACQUIRE_ALL_RESOURCES = 100;
