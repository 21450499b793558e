// Shared acquisitions beside exclusive ones, as a readers-writer lock (etcd's RWMutex recipe): who an
// acquisition waits for, in each mode. acquisition.ts runs the line; these rules say what a grant
// checks, whom a waiter watches, and how a refusal reads.
//
// Shared holders are keys of their own (keys.ts: r/R/s/<lease id>), each on its acquisition's lease,
// its create revision the generation. Shared waiters stand in the same line as exclusive ones, in a
// part of it of their own (r/R/q/s/...), so that:
//  - an exclusive acquisition waits for every acquisition ahead of it: the whole line, the owner key,
//    and every shared holder. It is granted when the line before it is empty and nobody holds;
//  - a shared acquisition waits for the exclusive acquisitions ahead of it only: the exclusive part of
//    the line and the owner key. Shared holders never hold it up, but an exclusive waiter does, so that
//    shared acquisitions arriving one after another never starve an exclusive one.
// Shared holders cost an exclusive acquisition one compare in its transactions (no shared holder) and
// one read in their failure branch (the newest shared holder, to watch it), nothing more: an
// uncontended exclusive Acquire stays one transaction, and each handover one watch event and one
// transaction. An exclusive waiter behind shared holders watches the newest of them and
// tries again when it goes: one transaction for each shared holder still there when the one it watched
// left.
import type { ICompare, IKeyValue, IRangeResponse, IRequestOp, IResponseOp } from "etcd3";
import { DomainError } from "../errors/errors.js";
import type { AcquireMode } from "../tokens/token.js";
import { decodeMaxHolders, decodeOwner, noSemaphoreIn, prefixEnd, type KeyLayout, type Owner } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import { reads, type Reads } from "../etcd/reads.js";
import { prefixRange } from "../etcd/reader.js";
import { noLockDelay } from "./lock-delay.js";

/** Most shared holders a refusal names (it says how many there are in all). */
const NAMED_HOLDERS = 5;

/** What kept an acquisition from being granted, as aheadReads() found it. */
export interface Ahead {
  /** The key to watch for deletion: the acquisition it waits behind; undefined: none, try again. */
  key?: Buffer;
  /** With key: watch every key of [key, keyEnd) for a deletion (a full semaphore's holders). */
  keyEnd?: Buffer;
  /** A semaphore with a free permit and nobody ahead: try the grant again at once (semaphore.ts). */
  room?: boolean;
  /** The acquisition names another semaphore size than the one in force (semaphore.ts). */
  mismatch?: DomainError;
  /** The exclusive holder, if any. */
  owner?: IKeyValue;
  /** The lock-delay key, if a lock-delay is in force (lock-delay.ts). */
  lockDelay?: IKeyValue;
  /** The refusal of an Acquire without wait (when read with no `before`). */
  refusal(): DomainError;
}

/** The rules of one mode, for one resource. */
export interface LineRules {
  mode: AcquireMode;
  /** A counting semaphore's size (semaphore.ts); undefined for any other acquisition. */
  maxHolders?: number;
  /** The key a grant creates, on the acquisition's lease: its create revision is the generation. */
  holderKey: Buffer;
  /** Where the mode's waiters of a lease stand in line; a waiter's key is this and a nonce. */
  lineKey(leaseId: bigint): Buffer;
  /**
   * A first-try grant's compares: nobody this acquisition must wait for holds or waits. seenAt: the
   * revision of a look that found room (Ahead.room), which a semaphore's grant is checked against.
   */
  free(seenAt?: bigint): ICompare[];
  /**
   * A waiter's grant's compares (its key created at myRev): nobody it waits for is ahead or holds, as
   * read at seenAt.
   */
  firstInLine(myRev: bigint, seenAt?: bigint): ICompare[];
  /**
   * Whether a waiter whose last look found `ahead` in its way (now gone) may try its grant, or must look
   * again first: a shared waiter's grant cannot itself check that no exclusive waiter is ahead of it.
   */
  grantable(ahead: Buffer | undefined): boolean;
  /** Reads of the state that keeps it waiting: those ahead of it (created before `before`, if given). */
  aheadReads(before?: bigint): Reads<Ahead>;
  /**
   * The grant's writes, as a transaction's ops, under a further condition that the grant's own compares
   * cannot state; granted() tells from the responses whether they ran. Unset: the writes as they are.
   */
  grantIf?(writes: IRequestOp[]): IRequestOp[];
  granted?(responses: IResponseOp[]): boolean;
}

/** The rules of a mode for an acquisition of resource on lease leaseId (its own, or its session). */
export function lineRules(keys: KeyLayout, resource: string, mode: AcquireMode, leaseId: bigint): LineRules {
  return mode === "shared" ? sharedRules(keys, resource, leaseId) : exclusiveRules(keys, resource);
}

// A lock-delay (lock-delay.ts) holds up both modes alike: every grant checks that no lock-delay key
// exists; aheadReads() read it, and a waiter with nobody else ahead of it watches it.

function exclusiveRules(keys: KeyLayout, resource: string): LineRules {
  const owner = keys.ownerKey(resource);
  const [line, lineEnd] = keys.lineRange(resource);
  const shared = keys.sharedPrefix(resource);
  const delayKey = keys.lockDelayKey(resource);
  return {
    mode: "exclusive",
    holderKey: owner,
    lineKey: (leaseId) => keys.lineKey(resource, leaseId),
    free: () => [cmp.rangeEmpty(line, lineEnd), cmp.createdAt(owner, 0n), cmp.rangeEmpty(shared, prefixEnd(shared)), noLockDelay(keys, resource)],
    firstInLine: (myRev) => [
      cmp.rangeCreatedFrom(line, lineEnd, myRev),
      cmp.createdAt(owner, 0n),
      cmp.rangeEmpty(shared, prefixEnd(shared)),
      noLockDelay(keys, resource),
    ],
    grantable: () => true,
    aheadReads: (before) =>
      reads({
        before: newest(line, lineEnd, before),
        owner: { key: owner },
        holders: newest(shared, prefixEnd(shared), undefined, NAMED_HOLDERS),
        lockDelay: { key: delayKey },
      }).map(({ before, owner: o, holders, lockDelay }) => ({
        key: before.kvs[0]?.key ?? (o.kvs[0] ? owner : (holders.kvs[0]?.key ?? lockDelay.kvs[0]?.key)),
        owner: o.kvs[0],
        lockDelay: lockDelay.kvs[0],
        refusal: () => {
          if (o.kvs[0]) return heldBy(resource, decodeOwner(o.kvs[0]));
          if (holders.kvs.length > 0) return heldShared(resource, holders);
          return handingOver(resource);
        },
      })),
  };
}

function sharedRules(keys: KeyLayout, resource: string, leaseId: bigint): LineRules {
  const owner = keys.ownerKey(resource);
  // The exclusive waiters: the line up to its shared part.
  const [line, lineEnd] = keys.exclusiveLineRange(resource);
  const delayKey = keys.lockDelayKey(resource);
  const holders = keys.sharedPrefix(resource);
  const holdersEnd = prefixEnd(holders);
  return {
    mode: "shared",
    holderKey: keys.sharedKey(resource, leaseId),
    // No semaphore (semaphore.ts) may hold: an uncapped holder beside its permits would break its cap. The
    // grant checks it in its own transaction, without a read: no holder at all, or none whose value is a
    // semaphore's (etcd fails a compare of values on an empty range, hence the two steps).
    grantIf: (writes) => [
      op.txn({
        compare: [cmp.rangeEmpty(holders, holdersEnd)],
        success: writes,
        failure: [op.txn({ compare: [noSemaphoreIn(holders, holdersEnd)], success: writes, failure: [] })],
      }),
    ],
    granted: (responses) => {
      const outer = responses[0].response_txn;
      return outer.succeeded || outer.responses[0].response_txn.succeeded;
    },
    lineKey: (leaseId) => keys.sharedLineKey(resource, leaseId),
    free: () => [cmp.rangeEmpty(line, lineEnd), cmp.createdAt(owner, 0n), noLockDelay(keys, resource)],
    // etcd judges a compare of an empty range on a key that does not exist, and a waiter's own key is not
    // among the exclusive ones: "every exclusive waiter came after me" fails when there are none. So
    // the grant checks the owner key alone, and the waiter makes sure first that no exclusive waiter is
    // ahead of it (grantable): once true, that stays true, since a key created later has a greater
    // revision, and an exclusive waiter behind it, or arriving, waits for it.
    firstInLine: () => [cmp.createdAt(owner, 0n), noLockDelay(keys, resource)],
    grantable: (ahead) => ahead === undefined || ahead.equals(owner) || ahead.equals(delayKey),
    aheadReads: (before) =>
      reads({
        before: newest(line, lineEnd, before),
        owner: { key: owner },
        lockDelay: { key: delayKey },
        // The holder whose value sorts last: a semaphore's, if any holds (keys.ts, encodeHolder).
        semaphore: { key: holders, range_end: holdersEnd, sort_order: "Descend", sort_target: "Value", limit: 1 },
      }).map(({ before, owner: o, lockDelay, semaphore }) => ({
        key: before.kvs[0]?.key ?? (o.kvs[0] ? owner : lockDelay.kvs[0]?.key),
        owner: o.kvs[0],
        lockDelay: lockDelay.kvs[0],
        ...(semaphore.kvs[0] && decodeMaxHolders(semaphore.kvs[0].value) > 0
          ? { mismatch: uncappedMismatch(resource, decodeMaxHolders(semaphore.kvs[0].value)) }
          : {}),
        refusal: () => {
          if (o.kvs[0]) return heldBy(resource, decodeOwner(o.kvs[0]));
          if (before.kvs[0]) {
            return exclusiveWaits(resource);
          }
          return handingOver(resource);
        },
      })),
  };
}

/** The newest key of [key, end) (created before `before`, if given), or the newest `limit` keys. */
function newest(key: Buffer, end: Buffer, before?: bigint, limit = 1) {
  return {
    key,
    range_end: end,
    sort_order: "Descend" as const,
    sort_target: "Create" as const,
    limit,
    ...(limit === 1 ? { keys_only: true } : {}),
    ...(before !== undefined ? { max_create_revision: (before - 1n).toString() } : {}),
  };
}

/** The shared holders of a resource, oldest first, as decoded owners. */
export function sharedHolders(keys: KeyLayout, resource: string) {
  return prefixRange(keys.sharedPrefix(resource), { sort_order: "Ascend", sort_target: "Create" });
}

export function decodeShared(kvs: IKeyValue[]): Owner[] {
  return kvs.map(decodeOwner);
}

/** A shared acquisition without wait, refused because an exclusive one waits ahead of it. */
export function exclusiveWaits(resource: string): DomainError {
  return new DomainError(
    "aborted",
    `an exclusive acquisition waits for "${resource}", and shared ones queue behind it; acquire with wait set to queue for it`,
    "RESOURCE_HELD",
    { resource },
  );
}

export function heldBy(resource: string, owner: Owner): DomainError {
  return new DomainError(
    "aborted",
    `"${resource}" is held by ${owner.holder ? `"${owner.holder}"` : "another holder"} (generation ${owner.generation}); ` +
      "acquire with wait set to queue for it",
    "RESOURCE_HELD",
    { resource, holder: owner.holder, generation: String(owner.generation), lease_id: String(owner.leaseId), ...(owner.principal ? { holder_principal: owner.principal } : {}) },
    { resource, generation: owner.generation, leaseId: owner.leaseId },
  );
}

/** An exclusive acquisition refused while shared holders hold: names the newest few, and how many. */
function heldShared(resource: string, holders: IRangeResponse): DomainError {
  const count = Number(holders.count);
  const named = decodeShared(holders.kvs);
  const labels = named.map((h) => (h.holder ? `"${h.holder}"` : "a holder") + ` (generation ${h.generation})`).join(", ");
  const more = count > named.length ? ` and ${count - named.length} more` : "";
  return new DomainError(
    "aborted",
    `"${resource}" is held shared by ${count} holder${count === 1 ? "" : "s"}: ${labels}${more}; an exclusive acquisition ` +
      "waits for all of them: acquire with wait set to queue for it",
    "RESOURCE_HELD",
    { resource, shared_holders: String(count), holders: named.map((h) => h.holder).join(","), generations: named.map((h) => String(h.generation)).join(",") },
  );
}

/** A shared acquisition without max_holders while a semaphore of n holds (semaphore.ts). */
function uncappedMismatch(resource: string, n: number): DomainError {
  return new DomainError(
    "failed_precondition",
    `"${resource}" cannot be acquired shared without max_holders: it is a semaphore of ${n} while anyone holds or waits; ` +
      `acquire with max_holders ${n}, or once it is free`,
    "MAX_HOLDERS_MISMATCH",
    { resource, max_holders: String(n), requested: "0" },
  );
}

function handingOver(resource: string): DomainError {
  return new DomainError(
    "aborted",
    `"${resource}" is being handed over to the next in line; acquire with wait set to queue for it`,
    "RESOURCE_HELD",
    { resource },
  );
}
