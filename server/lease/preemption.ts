// Preemption (docs/preemption.md): an Acquire that takes a resource from whoever holds it, at once, for
// an orchestrator that knows the holder is gone. Fencing is what makes it safe: the old holder's writes
// are refused from the moment it is preempted, in both fence modes, whatever it still sends.
//
// etcd refuses a transaction that deletes and creates the same key, and a generation is the create
// revision of the owner key: ending one holder and granting the next cannot be one transaction. So:
//  1. The deciding transaction, checked against the holders as read (the owner key's create revision
//     and lease, or each shared holder's): ends every holder's acquisition (deletes its key), raises
//     the fence past every generation issued so far (the snapshot's revision + 1: no generation is
//     between it and the preemptor's), records each preempted lease (keys.ts: x/<lease>, attached to
//     that lease), and puts the lock-delay key with the value PREEMPTING on the preemptor's lease. A
//     release or an expiry that came first makes it fail; it then looks again and preempts whoever
//     holds by then.
//  2. The grant: while the PREEMPTING key is there, nobody else is granted (every grant checks that no
//     lock-delay key exists, and the first waiter waits for its deletion): the preemptor's grant deletes
//     it and creates the owner key, ahead of every waiter, whose places are untouched.
//  3. Best effort: the records and the fence are brought to the new generation (the fence already
//     refuses every older one; this makes Describe and the PREEMPTED answer name it).
// The old holder learns it at its next renewal: every replica watches the records (PreemptedLeases),
// so a renewal costs a map lookup, not an etcd read. Its lease is renewed no more: it expires at its
// TTL, and its record with it.
import type { IKeyValue, IRequestOp } from "etcd3";
import type { Logger } from "pino";
import { DomainError, invalid } from "../errors/errors.js";
import {
  decodeLockDelay,
  decodeOwner,
  decodePreempted,
  encodeGeneration,
  encodePreempted,
  prefixEnd,
  PREEMPTING,
  type KeyLayout,
  type Owner,
  type PreemptedEntry,
} from "../etcd/keys.js";
import type { Committer } from "../etcd/committer.js";
import { cmp, op } from "../etcd/ops.js";
import { prefixRange, type Reader, type Watch } from "../etcd/reader.js";
import { reads } from "../etcd/reads.js";
import { decodeShared } from "./shared.js";
import type { PreemptionPace } from "../budgets/preemption-pace.js";

const decidedError = (...a: ConstructorParameters<typeof DomainError>) => new Decided("decided", { cause: new DomainError(...a) });

/**
 * Most shared holders one preemption ends: each costs three operations of the deciding transaction, and
 * etcd allows 128 by default (--max-txn-ops).
 */
export const MAX_PREEMPTED_HOLDERS = 32;

/** Tries of the deciding transaction before giving up, each after the holders changed under it. */
const ATTEMPTS = 10;

/** An acquisition's preemption ended: its lease and generation. */
export interface PreemptedHolding {
  leaseId: bigint;
  generation: bigint;
}

/** Refuses what preempt cannot be combined with. */
export function checkPreempt(p: { mode?: "exclusive" | "shared"; lockDelayMs?: number }, onSession: boolean): void {
  if (p.mode === "shared") {
    throw invalid(
      "preempt needs an exclusive acquisition (mode unset or ACQUIRE_MODE_EXCLUSIVE): a takeover is for a writer replacing a holder that is gone; shared holders queue instead",
    );
  }
  if (onSession) throw invalid("preempt must be unset with session_id: a preemptor acquires on a lease of its own");
  if (p.lockDelayMs !== undefined && p.lockDelayMs !== 0) {
    throw invalid("lock_delay must be unset with preempt: a lock-delay protects a resource that cannot check tokens, and such a resource gets no guarantee from a takeover");
  }
}

export interface PreemptDeps {
  keys: KeyLayout;
  committer: Committer;
  reader: Reader;
  /** This replica's set of preempted leases: told at once, without waiting for its watch. */
  preempted?: PreemptedLeases;
  /** At most one preemption of a resource an interval (--preemption-interval). */
  preemptionPace?: PreemptionPace;
}

/**
 * Ends the current holding of resource and grants it on lease `lease`: the new generation, and the
 * holdings it ended. `grantWrites`: the grant's writes (the owner key on the lease, ...); `bind`: the
 * writes that bind the lease to its principal, which go with the first transaction that puts a key on it.
 */
export async function preempt(
  d: PreemptDeps,
  p: { resource: string; principal?: string },
  lease: bigint,
  grantWrites: IRequestOp[],
  bind: IRequestOp[],
): Promise<{ generation: bigint; preempted: PreemptedHolding[] }> {
  const { resource } = p;
  const byPrincipal = p.principal ?? "";
  const giveTurnBack = d.preemptionPace?.take(resource);
  try {
    return await decideAndGrant(d, p, lease, grantWrites, bind, byPrincipal);
  } catch (err) {
    // A preemption that ended nobody's holding leaves the resource's turn as it was.
    if (!(err instanceof Decided)) giveTurnBack?.();
    throw err instanceof Decided ? err.cause : err;
  }
}

/** A failure after the deciding transaction committed: the resource was preempted, its turn is taken. */
class Decided extends Error {}

async function decideAndGrant(
  d: PreemptDeps,
  p: { resource: string },
  lease: bigint,
  grantWrites: IRequestOp[],
  bind: IRequestOp[],
  byPrincipal: string,
): Promise<{ generation: bigint; preempted: PreemptedHolding[] }> {
  const { keys, committer, reader } = d;
  const { resource } = p;
  const ownerKey = keys.ownerKey(resource);
  const delayKey = keys.lockDelayKey(resource);
  const sharedPrefix = keys.sharedPrefix(resource);
  const sharedEnd = prefixEnd(sharedPrefix);
  for (let attempt = 1; ; attempt++) {
    const look = reads({ owner: { key: ownerKey }, delay: { key: delayKey }, shared: prefixRange(sharedPrefix) });
    const { revision, found } = await reader.snapshot("preempt", look);
    const owner = found.owner.kvs[0] ? decodeOwner(found.owner.kvs[0]) : undefined;
    if (found.delay.kvs[0]) throw refusedForDelay(resource, found.delay.kvs[0], owner);
    const holders = owner ? [owner] : decodeShared(found.shared.kvs);
    if (holders.length > MAX_PREEMPTED_HOLDERS) {
      throw new DomainError(
        "failed_precondition",
        `"${resource}" is held shared by ${holders.length} holders; one preemption ends at most ${MAX_PREEMPTED_HOLDERS}: release some of them, or acquire with wait set`,
        "RESOURCE_HELD",
        { resource, shared_holders: String(holders.length) },
      );
    }
    const keyOf = (h: Owner) => (owner ? ownerKey : keys.sharedKey(resource, h.leaseId));
    const compare = [
      cmp.createdAt(delayKey, 0n),
      ...(owner ? [cmp.createdAt(ownerKey, owner.generation), cmp.leaseIs(ownerKey, owner.leaseId)] : [cmp.createdAt(ownerKey, 0n)]),
      ...(owner ? [] : holders.map((h) => cmp.createdAt(keyOf(h), h.generation))),
      // No shared holder granted since the snapshot: each one ends with the others, or none does.
      owner || holders.length === 0
        ? cmp.rangeEmpty(sharedPrefix, sharedEnd)
        : { key: sharedPrefix, range_end: sharedEnd, target: "Create" as const, result: "Less" as const, create_revision: (revision + 1n).toString() },
    ];
    const success = [
      ...holders.map((h) => op.del(keyOf(h))),
      ...holders.map((h) => op.put(keys.preemptedKey(h.leaseId), encodePreempted({ resource, generation: h.generation, byGeneration: 0n, byPrincipal }), h.leaseId)),
      // Every generation issued so far is at most the snapshot's revision; the preemptor's is above it.
      ...(holders.length > 0 ? [op.put(keys.fenceKey(resource), encodeGeneration(revision + 1n))] : []),
      op.put(delayKey, PREEMPTING, lease),
      ...bind,
    ];
    const decided = await committer.commit("preempt", { compare, success, failure: [] });
    if (!decided.succeeded) {
      if (attempt < ATTEMPTS) continue;
      throw new DomainError("aborted", `"${resource}" changed hands too often to be preempted; acquire again`, "RESOURCE_HELD", { resource });
    }
    // This replica refuses the old leases' renewals from now on; the others once their watch sees the records.
    for (const h of holders) d.preempted?.note(h.leaseId, { resource, generation: h.generation, byGeneration: 0n, byPrincipal });
    const granted = await committer
      .commit("acquire", {
        compare: [cmp.createdAt(delayKey, decided.revision), cmp.leaseIs(delayKey, lease)],
        success: [op.del(delayKey), ...grantWrites],
        failure: [],
      })
      .catch((err: unknown) => {
        throw new Decided("decided", { cause: err });
      });
    if (!granted.succeeded) {
      // Only the preemptor's lease ending deletes the PREEMPTING key (LiftLockDelay leaves it).
      throw decidedError("aborted", `the preemption of "${resource}" was interrupted: the preemptor's lease ended before its grant; acquire again`);
    }
    const generation = granted.revision;
    for (const h of holders) d.preempted?.note(h.leaseId, { resource, generation: h.generation, byGeneration: generation, byPrincipal });
    await settle(d, resource, holders, { resource, generation: 0n, byGeneration: generation, byPrincipal }).catch(() => undefined);
    return { generation, preempted: holders.map((h) => ({ leaseId: h.leaseId, generation: h.generation })) };
  }
}

/** Step 3: the fence and the records name the new generation (nothing depends on it being done). */
async function settle(d: PreemptDeps, resource: string, holders: Owner[], by: PreemptedEntry): Promise<void> {
  const fenceKey = d.keys.fenceKey(resource);
  const to = encodeGeneration(by.byGeneration);
  const records = holders.map((h) => {
    const key = d.keys.preemptedKey(h.leaseId);
    const value = encodePreempted({ ...by, generation: h.generation });
    // A record whose lease has ended is gone, and stays gone.
    return op.txn({ compare: [cmp.exists(key)], success: [{ request_put: { key, value, ignore_lease: true } }], failure: [] });
  });
  await d.committer.commit("preempt", {
    compare: [],
    success: [op.txn({ compare: [cmp.valueLess(fenceKey, to)], success: [op.put(fenceKey, to)], failure: [] }), ...records],
    failure: [],
  });
}

function refusedForDelay(resource: string, kv: IKeyValue, owner: Owner | undefined): DomainError {
  const entry = decodeLockDelay(kv);
  if (entry.preempting) {
    return new DomainError("aborted", `"${resource}" is being handed over to another preemptor; acquire again`, "RESOURCE_HELD", { resource });
  }
  if (owner) {
    return new DomainError(
      "failed_precondition",
      `"${resource}" cannot be preempted: its holder (generation ${owner.generation}) asked for a lock-delay of ${entry.seconds}s, which protects a resource ` +
        "that cannot check fencing tokens, and a takeover would not: release it, or wait for it (acquire with wait set)",
      undefined,
      { resource, generation: String(owner.generation), lock_delay_seconds: String(entry.seconds) },
    );
  }
  return new DomainError(
    "failed_precondition",
    `"${resource}" cannot be preempted: it is in the lock-delay of a holder whose lease expired (generation ${entry.generation}), which protects a resource ` +
      "that cannot check fencing tokens; lift it (LiftLockDelay) if that holder is known to be gone, or acquire with wait set",
    undefined,
    { resource, generation: String(entry.generation) },
  );
}

/** The answer to a renewal of a preempted lease. */
export function preemptedError(leaseId: bigint, e: PreemptedEntry): DomainError {
  const by = e.byPrincipal ? ` by ${JSON.stringify(e.byPrincipal)}` : "";
  const gen = e.byGeneration > 0n ? `, now generation ${e.byGeneration}` : "";
  return new DomainError(
    "failed_precondition",
    `lease ${leaseId} lost "${e.resource}" (generation ${e.generation}): it was preempted${by}${gen}; its writes are refused and it is renewed no more: ` +
      "stop acting as the holder, and acquire again to queue behind the new one",
    "PREEMPTED",
    { lease_id: String(leaseId), resource: e.resource, generation: String(e.generation), by_generation: String(e.byGeneration), by_principal: e.byPrincipal },
  );
}

/** How long a failed watch of the records waits before reading them again. */
const RETRY_MS = 1000;

/**
 * The preempted leases, as this replica knows them: one read of the records, then one watch of them,
 * for the replica's life; a failed watch reads them all again. A renewal looks here, in memory.
 */
export class PreemptedLeases {
  private leases = new Map<bigint, PreemptedEntry>();
  private readonly stopping = new AbortController();
  private watch?: Watch;

  constructor(
    private readonly keys: KeyLayout,
    private readonly reader: Reader,
    private readonly log?: Logger,
  ) {}

  /** The record of a lease preempted, if it is. */
  of(leaseId: bigint): PreemptedEntry | undefined {
    return this.leases.get(leaseId);
  }

  /** A preemption this replica committed: known before its watch brings the record (which then replaces it). */
  note(leaseId: bigint, entry: PreemptedEntry): void {
    this.leases.set(leaseId, entry);
  }

  /** Starts following the records; runs until stop(). */
  start(): void {
    void this.follow();
  }

  stop(): void {
    this.stopping.abort();
    void this.watch?.close();
  }

  private async follow(): Promise<void> {
    const prefix = this.keys.preemptedPrefix();
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      try {
        const found = await this.reader.range("preempted leases", prefixRange(prefix));
        const leases = new Map<bigint, PreemptedEntry>();
        for (const kv of found.kvs) this.apply(leases, "Put", kv);
        this.leases = leases;
        this.watch = await this.reader.watch("preempted leases", { key: prefix, rangeEnd: prefixEnd(prefix), fromRevision: BigInt(found.header.revision) + 1n }, signal);
        for await (const res of this.watch) for (const e of res.events) this.apply(this.leases, e.type, e.kv);
      } catch (err) {
        if (signal.aborted) return;
        this.log?.warn({ err }, "following the preempted leases failed; reading them again");
      } finally {
        await this.watch?.close();
      }
      if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, RETRY_MS).unref());
    }
  }

  private apply(into: Map<bigint, PreemptedEntry>, type: string, kv: IKeyValue): void {
    const leaseId = this.keys.preemptedLeaseOf(kv.key);
    if (leaseId === undefined) return;
    const entry = type === "Delete" ? undefined : decodePreempted(kv.value);
    if (entry) into.set(leaseId, entry);
    else into.delete(leaseId);
  }
}
