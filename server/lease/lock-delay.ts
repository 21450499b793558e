// Lock-delay, as Chubby and Consul have it, for resources that cannot check fencing tokens: when an
// acquisition's lease expires (not when it is released), nobody is granted the resource for a delay
// that the acquisition chose, so that what the lost holder sent before it noticed its loss has time
// to land or fail before the next holder starts.
//
// All of it is kept by etcd, so that no server's clock decides and a replica's crash changes nothing:
//  - An acquisition with a delay D has two etcd leases: its own (TTL T) and a delay lease (TTL T + D),
//    whose ids tie them together (keys.ts, delayLeaseOf). Renewing or revoking the first renews or
//    revokes the second too, on any replica, with no read (leases.ts).
//  - Its grant also puts the lock-delay key, on the delay lease. Release deletes it in the transaction
//    that deletes the owner key. When the acquisition's lease expires, etcd deletes the owner key, and
//    D later, with the delay lease, the lock-delay key.
//  - Every grant requires the lock-delay key absent, and the first waiter in line waits for its
//    deletion as it waits for the owner key's: waiters are granted in order once the delay ends.
// An acquisition without a delay pays nothing for any of it: one lease, one grant transaction (with
// one more compare), renewals and releases as before (its lease id says it has no delay lease).
import { randomBytes } from "node:crypto";
import type { ICompare, IKeyValue, IRequestOp } from "etcd3";
import { DomainError, invalid } from "../errors/errors.js";
import type { Limits } from "../validation/limits.js";
import type { Token } from "../tokens/token.js";
import { decodeLockDelay, delayedLeaseIds, delayLeaseOf, encodeLockDelay, PREEMPTING, type KeyLayout, type LockDelayEntry } from "../etcd/keys.js";
import type { Committer } from "../etcd/committer.js";
import type { Leases } from "../etcd/leases.js";
import { cmp, op } from "../etcd/ops.js";
import { Reads } from "../etcd/reads.js";

/** Draws of a pair of lease ids before giving up: each draw collides with one in use 1 in 2^32 times per delayed lease. */
const ID_DRAWS = 5;

/** The delay an Acquire asks for, in whole seconds, rounded up (0: none). */
export function lockDelaySeconds(requestedMs: number | undefined, limits: Limits, onSession: boolean, shared = false): number {
  if (requestedMs === undefined || requestedMs === 0) return 0;
  const allowed = `allowed: 0s (none) to ${limits.maxLockDelaySeconds}s, the server's maximum (--max-lock-delay)`;
  if (requestedMs < 0) throw invalid(`lock_delay ${requestedMs / 1000}s is negative; ${allowed}`);
  if (requestedMs > limits.maxLockDelaySeconds * 1000) throw invalid(`lock_delay ${requestedMs / 1000}s is above the maximum; ${allowed}`);
  if (onSession) {
    throw invalid("lock_delay must be unset with session_id: acquisitions on a session end with the session; acquire on a lease of its own for a lock-delay");
  }
  if (shared) {
    throw invalid(
      "lock_delay must be unset with mode ACQUIRE_MODE_SHARED: a lock-delay keeps writers out after a lost exclusive holder, and shared holders do not write",
    );
  }
  return Math.ceil(requestedMs / 1000);
}

/**
 * The leases of an acquisition with a delay: its own, and the delay lease that outlives it by the delay.
 * Answers the acquisition's lease, as Leases.grant does. An id already in use is drawn again.
 */
export async function grantWithDelay(leases: Leases, ttlSeconds: number, delaySeconds: number): Promise<{ id: bigint; ttlSeconds: number }> {
  for (let draw = 1; ; draw++) {
    const ids = delayedLeaseIds(randomBytes(4).readUInt32BE());
    const [delayLease, lease] = await Promise.allSettled([leases.grant(ttlSeconds + delaySeconds, ids.delayLease), leases.grant(ttlSeconds, ids.lease)]);
    if (delayLease.status === "fulfilled" && lease.status === "fulfilled") return lease.value;
    // Neither lease is of use without the other.
    if (delayLease.status === "fulfilled") void leases.revokeEventually(ids.delayLease);
    if (lease.status === "fulfilled") void leases.revokeEventually(ids.lease);
    const failed = [delayLease, lease].find((r): r is PromiseRejectedResult => r.status === "rejected")!.reason;
    if (!idInUse(failed) || draw >= ID_DRAWS) throw failed;
  }
}

const idInUse = (err: unknown) => err instanceof DomainError && err.kind === "failed_precondition" && err.message.includes("lease already exists");

/** The compare of every grant, with or without a delay of its own: no lock-delay is in force. */
export function noLockDelay(keys: KeyLayout, resource: string): ICompare {
  return cmp.createdAt(keys.lockDelayKey(resource), 0n);
}

/** Written by the grant of an acquisition with a delay: the lock-delay key, on its delay lease. */
export function lockDelayWrites(keys: KeyLayout, resource: string, leaseId: bigint, delaySeconds: number): IRequestOp[] {
  const delayLease = delayLeaseOf(leaseId);
  if (delaySeconds === 0 || delayLease === undefined) return [];
  return [op.put(keys.lockDelayKey(resource), encodeLockDelay(delaySeconds), delayLease)];
}

/**
 * Written by the release of a token, with the deletion of its owner key: its lock-delay key, if its
 * lease says it may have one. (While a generation holds, the lock-delay key can only be its own: no
 * grant happens while one exists.)
 */
export function releaseWrites(keys: KeyLayout, token: Token): IRequestOp[] {
  return delayLeaseOf(token.leaseId) !== undefined ? [op.del(keys.lockDelayKey(token.resource))] : [];
}

/**
 * Ends the lock-delay served on a resource: deletes its key, if nobody holds the resource (a holder's own
 * lock-delay key is its future delay, not one being served), and revokes its delay lease. Waiters are
 * granted as when the delay ends by itself, since they wait for the key's deletion.
 */
export async function liftLockDelay(d: { keys: KeyLayout; committer: Committer; leases: Leases }, resource: string): Promise<{ lifted: boolean; generation: bigint }> {
  const { keys, committer, leases } = d;
  const key = keys.lockDelayKey(resource);
  const lifted = Reads.one({ key });
  const res = await committer.commit("lift lock-delay", {
    // A preemption handing the resource over (preemption.ts) is not a lock-delay: it is not lifted.
    compare: [cmp.createdAt(keys.ownerKey(resource), 0n), cmp.exists(key), { key, target: "Value", result: "NotEqual", value: PREEMPTING }],
    success: [...lifted.ops(), op.del(key)],
    failure: [],
  });
  const kv = res.succeeded ? lifted.decodeTxn(res.responses).kvs[0] : undefined;
  if (!kv) return { lifted: false, generation: 0n };
  const entry = decodeLockDelay(kv);
  if (entry.delayLease !== 0n) void leases.revokeEventually(entry.delayLease);
  return { lifted: true, generation: entry.generation };
}

/** What Describe and Observe show of a lock-delay key as read, held or not. */
export interface LockDelayState {
  /** The delay of the holder, or of the one whose expiry is being served. */
  lockDelaySeconds?: number;
  /** Set while the delay is served (nobody holds the resource): about when it ends. */
  lockDelayUntil?: Date;
}

export async function lockDelayState(leases: Leases, kv: IKeyValue | undefined, held: boolean): Promise<LockDelayState> {
  if (!kv) return {};
  const entry = decodeLockDelay(kv);
  if (entry.preempting) return {};
  if (held) return { lockDelaySeconds: entry.seconds };
  return { lockDelaySeconds: entry.seconds, lockDelayUntil: await until(leases, entry) };
}

/** The refusal of an Acquire that does not wait, while a lock-delay is served. */
export async function inLockDelay(leases: Leases, resource: string, kv: IKeyValue): Promise<DomainError> {
  const entry = decodeLockDelay(kv);
  if (entry.preempting) {
    return new DomainError("aborted", `"${resource}" is being handed over to a preemptor; acquire with wait set to queue for it`, "RESOURCE_HELD", { resource });
  }
  const at = (await until(leases, entry)).toISOString();
  return new DomainError(
    "aborted",
    `"${resource}" is in a lock-delay until about ${at}: the lease of its holder (generation ${entry.generation}) expired, ` +
      `and that acquisition asked for a lock-delay of ${entry.seconds}s; acquire again after that time, or with wait set to be granted when it ends`,
    "LOCK_DELAY",
    { resource, lock_delay_until: at, generation: String(entry.generation) },
  );
}

/**
 * About when a lock-delay ends: from now, etcd's time left on the delay lease. etcd reports whole seconds,
 * rounded down: the end is taken at the top of the last one, so that a caller that waits until then is
 * rarely early (etcd's check for expired leases, every 500 ms, may still be up to that late).
 */
async function until(leases: Leases, entry: LockDelayEntry): Promise<Date> {
  const left = entry.delayLease !== 0n ? Math.max(0, await leases.timeToLive(entry.delayLease)) + 1 : entry.seconds;
  return new Date(Date.now() + left * 1000);
}
