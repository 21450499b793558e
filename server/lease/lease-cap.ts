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
import type { Reader } from "../etcd/reader.js";
import { Reads } from "../etcd/reads.js";

export interface LeaseCapDeps {
  keys: KeyLayout;
  committer: Committer;
  reader: Reader;
}

/** Tries per claim before giving up as ABORTED: each failed try means another call took a slot meanwhile. */
const MAX_TRIES = 64;

/**
 * Slots read after a miss, from the slot missed on: what a claim reads grows with this, not with the
 * leases the principal holds (a principal may hold 100,000).
 */
const WINDOW = 256;

/**
 * Takes a slot of the principal's cap for leaseId, or throws RESOURCE_EXHAUSTED naming the cap when all
 * cap slots are taken. The first try is a slot picked at random (cheap while few are taken); after a miss,
 * the same transaction has read the WINDOW taken slots from there on, and the next try takes one of the
 * free ones among them. A window with no free slot (the cap nearly full there) is followed by a count of
 * the taken slots: all taken, the claim is refused; else the slots are read a window at a time from the
 * first until free ones show (what a claim reads grows with the cap only when the cap is nearly full).
 */
export async function claimLeaseSlot(d: LeaseCapDeps, principal: string, cap: number, leaseId: bigint): Promise<void> {
  const prefix = d.keys.capSlotsPrefix(principal);
  const end = prefixEnd(prefix);
  const windowFrom = (slot: number) => Reads.one({ key: d.keys.capSlotKey(principal, slot), range_end: end, keys_only: true, limit: WINDOW });
  /** The free slots a window read from `from` shows; `next`: the slot after the last it read. */
  const freeIn = (from: number, kvs: { key: Buffer }[]) => {
    // Slot keys are fixed-width hex: in key order, in slot order. The free slots: the gaps between taken
    // ones, and those after the last if the window reached the end of the range.
    const taken = kvs.map((kv) => parseInt(kv.key.subarray(prefix.length).toString(), 16));
    const free: number[] = [];
    let at = from;
    for (const t of taken) {
      for (; at < Math.min(t, cap) && free.length < WINDOW; at++) free.push(at);
      at = Math.max(at, t + 1);
    }
    const ended = taken.length < WINDOW;
    if (ended) for (; at < cap && free.length < WINDOW; at++) free.push(at);
    return { free, next: at, ended };
  };
  // One of them at random, so that concurrent claims that missed near each other spread out.
  const pick = (free: number[]) => free[Math.floor(Math.random() * free.length)];
  let slot = Math.floor(Math.random() * cap);
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const key = d.keys.capSlotKey(principal, slot);
    const window = windowFrom(slot);
    const res = await d.committer.commit("lease cap", {
      compare: [cmp.createdAt(key, 0n)],
      success: [op.put(key, Buffer.alloc(0), leaseId)],
      failure: window.ops(),
    });
    if (res.succeeded) return;
    let { free } = freeIn(slot, window.decodeTxn(res.responses).kvs);
    if (free.length === 0) {
      // Slots past the cap (left from a larger cap) count too.
      const held = Number((await d.reader.range("lease cap", { key: prefix, range_end: end, count_only: true })).count);
      if (held >= cap) throw exhausted(principal, cap, held);
      for (let from = 0; free.length === 0 && from < cap; ) {
        const r = freeIn(from, (await d.reader.snapshot("lease cap", windowFrom(from))).found.kvs);
        free = r.free;
        if (r.ended) break;
        from = r.next;
      }
      if (free.length === 0) continue; // taken meanwhile: count again on the next miss
    }
    slot = pick(free);
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
