// Counting semaphores: shared acquisitions that name max_holders N, granted while fewer than N hold.
//
// A permit is a shared holding like any other (keys.ts: r/R/s/<lease id>, its create revision the
// generation, its token a shared token), so renewal, release, Describe, Observe and the fenced store
// treat it as one. Its value, and its waiter's value in the shared part of the line, carry N: the N in
// force is that of the oldest holder or waiter, which set it, and it lasts exactly as long as someone
// holds or waits, since those keys live on their leases. No key of its own could: nothing runs when a
// lease expires.
//
// etcd cannot compare a count in a transaction, so a grant is checked against a read: the read finds
// fewer than N holders at revision R, and the grant's transaction checks that no holder was created after
// R. Holders that left since only lower the count, so the check and the grant in one transaction are
// exact: a release racing an expiry, or two waiters racing for one freed permit, is decided by etcd.
//
// Waiters stand first come first served in the shared part of the line. The first of them watches the
// holders (any of them leaving lets it look again); each other waiter watches the waiter just ahead
// of it. A holder leaving thus wakes one waiter, which takes the freed permit; the next waiter wakes
// when that one leaves the line, finds the semaphore full again, and watches the holders in turn.
import type { IRangeResponse } from "etcd3";
import { DomainError, invalid } from "../errors/errors.js";
import { decodeMaxHolders, decodeOwner, prefixEnd, type KeyLayout } from "../etcd/keys.js";
import { cmp } from "../etcd/ops.js";
import { reads } from "../etcd/reads.js";
import { noLockDelay } from "./lock-delay.js";
import { exclusiveWaits, heldBy, type Ahead, type LineRules } from "./shared.js";

/** The largest max_holders accepted: a grant reads the holders' count, never the holders themselves. */
export const MAX_MAX_HOLDERS = 100_000;

/** Checks AcquireRequest.max_holders: undefined when it asks for no cap. */
export function checkMaxHolders(maxHolders: number | undefined, shared: boolean): number | undefined {
  if (maxHolders === undefined || maxHolders === 0) return undefined;
  if (!Number.isInteger(maxHolders) || maxHolders < 0 || maxHolders > MAX_MAX_HOLDERS) {
    throw invalid(`max_holders must be between 1 and ${MAX_MAX_HOLDERS} (0 or unset: no cap), got ${maxHolders}`);
  }
  if (!shared) throw invalid("max_holders needs mode ACQUIRE_MODE_SHARED: a counting semaphore's permits are shared holdings");
  return maxHolders;
}

/** The rules of a semaphore acquisition of at most n holders, for one resource. */
export function semaphoreRules(keys: KeyLayout, resource: string, leaseId: bigint, n: number): LineRules {
  const owner = keys.ownerKey(resource);
  const [exclusiveLine, exclusiveEnd] = keys.exclusiveLineRange(resource);
  const sharedLine = keys.sharedLinePrefix(resource);
  const sharedLineEnd = prefixEnd(sharedLine);
  const holders = keys.sharedPrefix(resource);
  const holdersEnd = prefixEnd(holders);
  const delayKey = keys.lockDelayKey(resource);
  // Nobody ahead: no exclusive acquisition holds or waits, no lock-delay runs.
  const clear = () => [cmp.rangeEmpty(exclusiveLine, exclusiveEnd), cmp.createdAt(owner, 0n), noLockDelay(keys, resource)];
  // No holder was created after the read that found room (an empty range passes: 0 < rev + 1).
  const noNewHolder = (seenAt: bigint) => ({ key: holders, range_end: holdersEnd, target: "Create" as const, result: "Less" as const, create_revision: (seenAt + 1n).toString() });
  return {
    mode: "shared",
    maxHolders: n,
    holderKey: keys.sharedKey(resource, leaseId),
    lineKey: (id) => keys.sharedLineKey(resource, id),
    // The first holder is one transaction; any later one is granted on a read that found room.
    free: (seenAt) => [...clear(), cmp.rangeEmpty(sharedLine, sharedLineEnd), seenAt === undefined ? cmp.rangeEmpty(holders, holdersEnd) : noNewHolder(seenAt)],
    // First of the semaphore's waiters (its own key is in that part of the line), and room as last read.
    firstInLine: (myRev, seenAt) => [
      cmp.rangeCreatedFrom(sharedLine, sharedLineEnd, myRev),
      cmp.createdAt(owner, 0n),
      noLockDelay(keys, resource),
      noNewHolder(seenAt ?? myRev),
    ],
    // Only a fresh look tells whether a permit is free: a waiter woken by a deletion looks again.
    grantable: (ahead) => ahead === undefined,
    aheadReads: (before) => {
      const upTo = before !== undefined ? { max_create_revision: (before - 1n).toString() } : {};
      const newest = (key: Buffer, range_end: Buffer) => ({ key, range_end, sort_order: "Descend" as const, sort_target: "Create" as const, limit: 1, keys_only: true, ...upTo });
      const oldest = (key: Buffer, range_end: Buffer, more = {}) => ({ key, range_end, sort_order: "Ascend" as const, sort_target: "Create" as const, limit: 1, ...more });
      return reads({
        exclusive: newest(exclusiveLine, exclusiveEnd),
        owner: { key: owner },
        lockDelay: { key: delayKey },
        waiter: newest(sharedLine, sharedLineEnd),
        firstWaiter: oldest(sharedLine, sharedLineEnd, upTo),
        firstHolder: oldest(holders, holdersEnd),
      }).map(({ exclusive, owner: o, lockDelay, waiter, firstWaiter, firstHolder }): Ahead => {
        const count = Number(firstHolder.count);
        const full = count >= n;
        const key = exclusive.kvs[0]?.key ?? (o.kvs[0] ? owner : (lockDelay.kvs[0]?.key ?? waiter.kvs[0]?.key ?? (full ? holders : undefined)));
        const inForce = nInForce(firstHolder, firstWaiter);
        return {
          key,
          ...(key === holders ? { keyEnd: holdersEnd } : {}),
          owner: o.kvs[0],
          lockDelay: lockDelay.kvs[0],
          room: key === undefined,
          ...(inForce !== undefined && inForce !== n ? { mismatch: mismatch(resource, inForce, n) } : {}),
          refusal: () => {
            if (o.kvs[0]) return heldBy(resource, decodeOwner(o.kvs[0]));
            if (exclusive.kvs[0]) {
              return exclusiveWaits(resource);
            }
            const queued = waiter.kvs[0] ? ` and ${Number(waiter.count)} wait${Number(waiter.count) === 1 ? "s" : ""} ahead` : "";
            return new DomainError(
              "aborted",
              `"${resource}" is a semaphore of ${n} with ${count} holder${count === 1 ? "" : "s"}${queued}; acquire with wait set to queue for a permit`,
              "RESOURCE_HELD",
              { resource, max_holders: String(n), shared_holders: String(count) },
            );
          },
        };
      });
    },
  };
}

/** The N in force: that of the oldest holder or waiter (0: shared without a cap); undefined: nobody holds or waits. */
function nInForce(firstHolder: IRangeResponse, firstWaiter: IRangeResponse): number | undefined {
  const h = firstHolder.kvs[0];
  const w = firstWaiter.kvs[0];
  const oldest = h && w ? (BigInt(h.create_revision) < BigInt(w.create_revision) ? h : w) : (h ?? w);
  return oldest ? decodeMaxHolders(oldest.value) : undefined;
}

/** The N in force among a resource's shared holders as read (oldest first): 0 when they are not a semaphore's. */
export function maxHoldersOf(holders: { maxHolders: number }[]): number {
  return holders[0]?.maxHolders ?? 0;
}

/** An acquisition naming another N than the one in force (0 in force: shared holders without a cap). */
export function mismatch(resource: string, inForce: number, requested: number): DomainError {
  const now = inForce === 0 ? "shared holders without a cap hold or wait for it" : `it is a semaphore of ${inForce} while anyone holds or waits`;
  const asked = requested === 0 ? "shared without max_holders" : `as a semaphore of ${requested}`;
  return new DomainError(
    "failed_precondition",
    `"${resource}" cannot be acquired ${asked}: ${now}; ` +
      (inForce === 0 ? "acquire it without max_holders, or once it is free" : `acquire with max_holders ${inForce}, or once it is free`),
    "MAX_HOLDERS_MISMATCH",
    { resource, max_holders: String(inForce), requested: String(requested) },
  );
}
