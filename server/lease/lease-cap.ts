// --max-leases-per-caller, decided by etcd: a principal's new lease (an acquisition's own, or a session's)
// takes one of cap slot keys (keys.ts, capSlotKey) in a transaction that finds that slot free, and the
// slot key lives on the lease. Two calls cannot take one slot, so however calls interleave, on one replica
// or many, a principal never holds more than cap leases; a slot comes free by itself when its lease ends
// (released, revoked or expired).
import { exhausted as budgetExhausted } from "../budgets/budget.js";
import { DomainError } from "../errors/errors.js";
import type { Committer } from "../etcd/committer.js";
import { prefixEnd, type KeyLayout } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import { Reads } from "../etcd/reads.js";

export interface LeaseCapDeps {
  keys: KeyLayout;
  committer: Committer;
}

/** Tries per claim before giving up as ABORTED: each failed try means another call took a slot meanwhile. */
const MAX_TRIES = 64;

/**
 * Takes a slot of the principal's cap for leaseId, or throws RESOURCE_EXHAUSTED naming the cap when all
 * cap slots are taken. The first try is a slot picked at random (cheap while few are taken); after a
 * miss, the same transaction has read which slots are taken, and the next try picks among the free ones.
 */
export async function claimLeaseSlot(d: LeaseCapDeps, principal: string, cap: number, leaseId: bigint): Promise<void> {
  const prefix = d.keys.capSlotsPrefix(principal);
  const slots = Reads.one({ key: prefix, range_end: prefixEnd(prefix), keys_only: true });
  let slot = Math.floor(Math.random() * cap);
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const key = d.keys.capSlotKey(principal, slot);
    const res = await d.committer.commit("lease cap", {
      compare: [cmp.createdAt(key, 0n)],
      success: [op.put(key, Buffer.alloc(0), leaseId)],
      failure: slots.ops(),
    });
    if (res.succeeded) return;
    const taken = new Set(slots.decodeTxn(res.responses).kvs.map((kv) => parseInt(kv.key.subarray(prefix.length).toString(), 16)));
    // Slots past the cap (left from a larger cap) count too.
    if (taken.size >= cap) throw exhausted(principal, cap, taken.size);
    const free: number[] = [];
    for (let i = 0; i < cap && free.length < 1024; i++) if (!taken.has(i)) free.push(i);
    if (free.length === 0) throw exhausted(principal, cap, taken.size);
    slot = free[Math.floor(Math.random() * free.length)];
  }
  throw new DomainError("aborted", `too many concurrent calls of "${principal}" competed for its lease cap (--max-leases-per-caller ${cap}); retry`);
}

function exhausted(principal: string, cap: number, held: number): DomainError {
  return budgetExhausted("leases", {
    who: `"${principal}" holds ${held} leases and sessions`,
    limit: cap,
    used: held,
    unit: "leases and sessions",
    hint: "release some (a preempted lease too: Release frees it at once), close a session, or acquire on a session",
    more: { cap: String(cap), principal },
  });
}
