// The bytes a caller writes into etcd's history, paced per caller on each replica: a token bucket of
// bytes that refills at --max-history-bytes-per-second, with a burst of one second's worth. Every put
// counts, an overwrite as much as a new key: etcd keeps the old value until compaction, so what
// compaction must keep up with is the rate of writes, not the live data.
//
// A call is let in while the caller's bucket is not empty, and takes its whole cost, which may leave the
// bucket below zero: so a call larger than the burst still goes, and the caller waits the longer after
// it. A call while the bucket is empty is refused HISTORY_RATE_EXCEEDED with the time after which it
// would be let in: it can always succeed later.
import { exhausted } from "./budget.js";

/** How many idle callers' buckets are kept before the full ones are forgotten. */
const SWEEP_AT = 10_000;

/**
 * The default rate, from etcd's quota and the compaction interval (docs/budgets.md): 32 callers writing
 * at their full rate put half the quota into the history that two compaction intervals keep (the
 * compactor keeps at least one interval of history behind the current revision).
 */
export function defaultHistoryBytesPerSecond(etcdQuotaBytes: number, compactionIntervalMs: number): number {
  const intervalSeconds = Math.max(1, (compactionIntervalMs || 5000) / 1000);
  return Math.max(64 * 1024, Math.floor(etcdQuotaBytes / 2 / 32 / (2 * intervalSeconds)));
}

interface Bucket {
  tokens: number;
  at: number;
}

export class HistoryRate {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    /** Bytes a second; 0: no budget. */
    private readonly rate: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get bytesPerSecond(): number {
    return this.rate;
  }

  /** Takes cost bytes of the caller's budget, or throws HISTORY_RATE_EXCEEDED while it is spent. */
  charge(caller: string, cost: number): void {
    if (this.rate <= 0 || cost <= 0) return;
    const burst = this.rate;
    const now = this.now();
    let b = this.buckets.get(caller);
    if (!b) {
      if (this.buckets.size >= SWEEP_AT) this.sweep(now);
      b = { tokens: burst, at: now };
      this.buckets.set(caller, b);
    }
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    if (b.tokens <= 0) {
      const retryAfterMs = Math.ceil((-b.tokens / this.rate) * 1000) + 1;
      throw exhausted("history_bytes_per_second", {
        who: `this caller wrote ${Math.ceil(burst - b.tokens)} bytes into etcd's history in its last burst`,
        limit: this.rate,
        used: Math.ceil(burst - b.tokens),
        delta: cost,
        unit: "bytes a second",
        hint: `nothing was written; send it again in ${retryAfterMs} ms, and write more slowly (every put counts, overwrites too)`,
        more: { retry_after_ms: String(retryAfterMs) },
      });
    }
    b.tokens -= cost;
  }

  /** Gives back cost bytes of a call that wrote nothing (refused, or bad input), up to the full budget. */
  refund(caller: string, cost: number): void {
    const b = this.buckets.get(caller);
    if (b && cost > 0) b.tokens = Math.min(this.rate, b.tokens + cost);
  }

  /** Forgets the callers whose bucket has refilled: they are as new. */
  private sweep(now: number): void {
    for (const [caller, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.rate >= this.rate) this.buckets.delete(caller);
    }
  }
}
