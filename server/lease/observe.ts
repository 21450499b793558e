// Observe: the holders of a resource now, then each change of holders.
//
// It watches the owner key, the lock-delay key, the line and the shared holders together, in one range
// (keys.ts, holdersRange). When
// the owner key goes while acquisitions wait in line, the first of them is about to be granted: that is a
// handover, reported once the next holder is there; so is the last shared holder leaving while an
// exclusive acquisition waits. Shared holders joining and leaving are reported as they happen. A
// lock-delay (lock-delay.ts) is reported when it starts, at the holder's expiry, whether or not anyone
// waits. The resource is reported free only when nobody holds it, no lock-delay runs, and nobody waits.
import type { IKeyValue } from "etcd3";
import { checkResource } from "../validation/validate.js";
import type { Token } from "../tokens/token.js";
import { decodeOwner, type Owner } from "../etcd/keys.js";
import { reads } from "../etcd/reads.js";
import type { AcquireDeps } from "./acquisition.js";
import { lockDelayState, type LockDelayState } from "./lock-delay.js";
import { maxHoldersOf } from "./semaphore.js";
import { sharedHolders } from "./shared.js";

/** One holder, exclusive or shared: its token's mode says which. */
export interface HolderState {
  holder: string;
  /** The principal that acquired it, with authentication on. */
  holderPrincipal?: string;
  token: Token;
  /** Describe only: the TTL left on its lease. */
  ttlSeconds?: number;
  /** The value it published (AcquireRequest.value, Proclaim); unset without one. */
  value?: Uint8Array;
  /** Observe only: it has a value, left out of the message to keep it within the answer budget. */
  valueLeftOut?: boolean;
}

export interface Ownership extends LockDelayState {
  /** Held exclusively, or by shared holders. */
  held: boolean;
  /** The exclusive holder's label, principal and token; unset when the holders are shared. */
  holder?: string;
  holderPrincipal?: string;
  token?: Token;
  value?: Uint8Array;
  /** Every holder after this change: the exclusive one, or the shared ones, oldest first. */
  holders: HolderState[];
  /** Shared holders that joined, and that left, since the previous report. */
  joined: HolderState[];
  left: HolderState[];
  /** The etcd revision at which this state took effect. */
  revision: bigint;
  /** The shared holders' semaphore size (semaphore.ts); 0 when they are not a semaphore's. */
  maxHolders: number;
  /** Changes before this report were dropped: its reader fell behind (streams/coalescing-queue.ts). */
  missedChanges?: boolean;
}

export async function* observe(d: AcquireDeps, resource: string, signal: AbortSignal): AsyncGenerator<Ownership> {
  checkResource(resource);
  const { keys, reader } = d;
  const ownerKey = keys.ownerKey(resource);
  const [line, lineEnd] = keys.lineRange(resource);
  const sharedPrefix = keys.sharedPrefix(resource);
  const lockDelayKey = keys.lockDelayKey(resource);
  const start = await reader.snapshot(
    "observe",
    reads({ owner: { key: ownerKey }, line: { key: line, range_end: lineEnd, count_only: true }, shared: sharedHolders(keys, resource), lockDelay: { key: lockDelayKey } }),
  );
  const found = start.found;
  let owner = found.owner.kvs[0] ? decodeOwner(found.owner.kvs[0]) : undefined;
  let waiting = Number(found.line.count);
  /** The shared holders by key, in the order they joined (their generations'). */
  const shared = new Map<string, Owner>(found.shared.kvs.map((kv) => [kv.key.toString("hex"), decodeOwner(kv)]));
  let lockDelay: IKeyValue | undefined = found.lockDelay.kvs[0];
  let joined: Owner[] = [];
  let left: Owner[] = [];
  /** A shared holder's value changed since the previous report. */
  let proclaimed = false;
  const report = async (revision: bigint): Promise<Ownership> => ({
    ...ownership(resource, owner, shared, joined, left, revision),
    ...(await lockDelayState(d.leases, lockDelay, owner !== undefined)),
  });
  // A resource passing to the next in line is reported free at the start, as it was before anyone waited.
  let reported = stateOf(owner, shared, lockDelay, 0);
  yield await report(start.revision);

  const [from, to] = keys.holdersRange(resource);
  const watch = await reader.watch("observe", { key: from, rangeEnd: to, fromRevision: start.revision + 1n }, signal);
  try {
    for await (const res of watch) {
      // One transaction can both take a waiter out of the line and make it a holder: judge the state
      // after all the events of one revision.
      const events = res.events;
      for (let i = 0; i < events.length; i++) {
        const ev = events[i];
        const key = ev.kv.key;
        if (key.equals(ownerKey)) owner = ev.type === "Put" ? decodeOwner(ev.kv) : undefined;
        else if (key.equals(lockDelayKey)) lockDelay = ev.type === "Put" ? ev.kv : undefined;
        else if (key.subarray(0, sharedPrefix.length).equals(sharedPrefix)) {
          const id = key.toString("hex");
          if (ev.type === "Put" && ev.kv.version === "1") {
            const h = decodeOwner(ev.kv);
            shared.set(id, h);
            joined.push(h);
          } else if (ev.type === "Put" && shared.has(id)) {
            // A shared holder's Proclaim: the holders change, nobody joins or leaves.
            shared.set(id, decodeOwner(ev.kv));
            proclaimed = true;
          } else if (ev.type === "Delete" && shared.has(id)) {
            left.push(shared.get(id)!);
            shared.delete(id);
          }
        } else waiting += ev.type === "Put" ? (ev.kv.version === "1" ? 1 : 0) : -1;
        if (events[i + 1]?.kv.mod_revision === ev.kv.mod_revision) continue;
        const state = stateOf(owner, shared, lockDelay, waiting);
        if (state !== undefined && (state !== reported || joined.length > 0 || left.length > 0 || proclaimed)) {
          reported = state;
          yield await report(BigInt(ev.kv.mod_revision));
          [joined, left] = [[], []];
          proclaimed = false;
        }
      }
    }
  } finally {
    await watch.close();
  }
}

/**
 * What is reported: an exclusive holder's generation, shared holders, a lock-delay, or a free resource;
 * undefined during a handover (nobody holds it and somebody waits).
 */
function stateOf(owner: Owner | undefined, shared: Map<string, Owner>, lockDelay: IKeyValue | undefined, waiting: number): string | undefined {
  // The mod revision moves with each Proclaim: a new value of the same holder is a change to report.
  if (owner) return `held ${owner.generation} ${owner.revision}`;
  if (shared.size > 0) return "shared";
  if (lockDelay) return `lock-delay ${lockDelay.create_revision}`;
  return waiting === 0 ? "free" : undefined;
}

function ownership(resource: string, owner: Owner | undefined, shared: Map<string, Owner>, joined: Owner[], left: Owner[], revision: bigint): Ownership {
  const exclusive = owner ? holderState(resource, owner, "exclusive") : undefined;
  const sharedNow = owner ? [] : [...shared.values()].sort((a, b) => (a.generation < b.generation ? -1 : 1));
  return {
    held: exclusive !== undefined || sharedNow.length > 0,
    ...(exclusive ? { holder: exclusive.holder, holderPrincipal: owner!.principal, token: exclusive.token, ...(exclusive.value ? { value: exclusive.value } : {}) } : {}),
    holders: exclusive ? [exclusive] : sharedNow.map((h) => holderState(resource, h, "shared")),
    joined: joined.map((h) => holderState(resource, h, "shared")),
    left: left.map((h) => holderState(resource, h, "shared")),
    revision,
    maxHolders: maxHoldersOf(sharedNow),
  };
}

/** A holder as Describe and Observe show it (its token unsigned: the coordinator signs it). */
export function holderState(resource: string, o: Owner, mode: "exclusive" | "shared"): HolderState {
  const token: Token = { resource, generation: o.generation, leaseId: o.leaseId, ...(mode === "shared" ? { mode } : {}) };
  return { holder: o.holder, ...(o.principal ? { holderPrincipal: o.principal } : {}), token, ...(o.value.byteLength > 0 ? { value: o.value } : {}) };
}
