// The budgets one caller may spend (docs/budgets.md): each has a name, the flag that sizes it, and the
// ErrorInfo reason of its refusal. Every refusal is RESOURCE_EXHAUSTED and says the same three things, in
// its message and in its metadata: which budget, its size (and flag), and what the caller has used.
import { DomainError, type Reason } from "../errors/errors.js";

export type BudgetName =
  | "leases"
  | "lease_bytes"
  | "store_bytes"
  | "caller_store_bytes"
  | "history_bytes_per_second"
  | "streams"
  | "waiters"
  | "preemptions"
  | "buffered_bytes";

export interface Budget {
  /** The flag that sizes it. */
  flag: string;
  /** The reason of its refusal; none for a budget that never refuses (it paces, or bounds an answer). */
  reason?: Reason;
  /** What it counts, in a person's words. */
  counts: string;
  /** Where it is kept: in etcd (exact across replicas), or on each replica. */
  kept: "etcd" | "replica";
}

export const BUDGETS: Record<BudgetName, Budget> = {
  leases: { flag: "--max-leases-per-caller", reason: "LEASES_EXCEEDED", counts: "leases and sessions held (preempted ones until released or expired)", kept: "etcd" },
  lease_bytes: { flag: "--max-bytes-per-lease", reason: "LEASE_BYTES_EXCEEDED", counts: "bytes the acquisitions of one lease or session store (values, labels, records)", kept: "etcd" },
  store_bytes: { flag: "--max-bytes-per-resource", reason: "QUOTA_EXCEEDED", counts: "bytes of one resource's store entries (keys and values)", kept: "etcd" },
  caller_store_bytes: {
    flag: "--max-store-bytes-per-caller",
    reason: "QUOTA_EXCEEDED",
    counts: "bytes of the store entries of every resource it pays for: whose bytes it last put (keys and values)",
    kept: "etcd",
  },
  history_bytes_per_second: { flag: "--max-history-bytes-per-second", reason: "HISTORY_RATE_EXCEEDED", counts: "bytes written into etcd's history a second (every put, overwrites too)", kept: "replica" },
  streams: { flag: "--max-streams-per-caller", reason: "STREAMS_EXCEEDED", counts: "KeepAlive and Observe streams open", kept: "replica" },
  waiters: { flag: "--max-waiters-per-caller", reason: "WAITERS_EXCEEDED", counts: "Acquire calls waiting", kept: "replica" },
  preemptions: { flag: "--preemption-interval", reason: "PREEMPTION_RATE_EXCEEDED", counts: "preemptions of one resource (one per interval)", kept: "replica" },
  buffered_bytes: { flag: "--max-stream-buffer-bytes", counts: "bytes the server holds for a stream whose reader is slow (answers and slow readers)", kept: "replica" },
};

export interface Spent {
  /** The budget's size, in its unit. */
  limit: bigint | number;
  /** What the caller has used of it. */
  used: bigint | number;
  /** What the refused call would have added, when it is an amount. */
  delta?: bigint | number;
  /** The refusal's first words: whose budget, and what it holds (e.g. `"alice" holds 5 leases and sessions`). */
  who: string;
  /** The unit of limit, used and delta (e.g. "bytes"). */
  unit: string;
  /** What the caller can do about it. */
  hint: string;
  /** More metadata (principal, lease_id, resource, retry_after_ms). */
  more?: Record<string, string>;
}

/** The refusal of a call over a budget: RESOURCE_EXHAUSTED, the budget's reason, its name, size, flag and use. */
export function exhausted(name: BudgetName, s: Spent): DomainError {
  const b = BUDGETS[name];
  const delta = s.delta !== undefined ? ` and this call adds ${s.delta}` : "";
  return new DomainError(
    "resource_exhausted",
    `${s.who}${delta}: over its budget "${name}" of ${s.limit} ${s.unit} (${b.flag} ${s.limit}); ${s.hint}`,
    b.reason,
    {
      budget: name,
      limit: String(s.limit),
      used: String(s.used),
      ...(s.delta !== undefined ? { delta: String(s.delta) } : {}),
      flag: b.flag,
      ...s.more,
    },
  );
}
