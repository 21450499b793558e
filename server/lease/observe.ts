// Observe: the holder of a resource now, then each change of holder.
//
// It watches the owner key and the line together. When the owner key goes while acquisitions wait in
// line, the first of them is about to be granted: that is a handover, reported once the next owner key
// is there. The resource is reported free only when nobody holds it and nobody waits. A lock-delay
// (lock-delay.ts) is reported when it starts, the holder's expiry, whether or not anyone waits: its
// key sorts between the owner key and the line, in the same watch.
import type { IKeyValue } from "etcd3";
import { checkResource } from "../domain/validate.js";
import type { Token } from "../domain/token.js";
import { decodeOwner, prefixEnd, type Owner } from "../etcd/keys.js";
import { prefixRange } from "../etcd/reader.js";
import type { AcquireDeps } from "./acquisition.js";
import { lockDelayState, type LockDelayState } from "./lock-delay.js";

export interface Ownership extends LockDelayState {
  held: boolean;
  holder?: string;
  /** The principal that acquired it, with authentication on. */
  holderPrincipal?: string;
  token?: Token;
  /** The etcd revision at which this state took effect. */
  revision: bigint;
}

export async function* observe(d: AcquireDeps, resource: string, signal: AbortSignal): AsyncGenerator<Ownership> {
  checkResource(resource);
  const { keys, reader } = d;
  const ownerKey = keys.ownerKey(resource);
  const linePrefix = keys.queuePrefix(resource);
  const lockDelayKey = keys.lockDelayKey(resource);
  const start = await reader.snapshot("observe", [{ key: ownerKey }, prefixRange(linePrefix, { count_only: true }), { key: lockDelayKey }]);
  let owner = start.ranges[0].kvs[0] ? decodeOwner(start.ranges[0].kvs[0]) : undefined;
  let waiting = Number(start.ranges[1].count);
  let lockDelay: IKeyValue | undefined = start.ranges[2].kvs[0];
  // A resource passing to the next in line is reported free at the start, as it was before anyone waited.
  let reported = stateOf(owner, lockDelay, 0);
  const report = async (revision: bigint) => ({ ...ownership(resource, owner, revision), ...(await lockDelayState(d.leases, lockDelay, owner !== undefined)) });
  yield await report(start.revision);

  // The owner key sorts just before the line ("owner" < "owner-delay" < "q/"), and nothing else of the
  // resource between.
  const watch = await reader.watch("observe", { key: ownerKey, rangeEnd: prefixEnd(linePrefix), fromRevision: start.revision + 1n }, signal);
  try {
    for await (const res of watch) {
      // One transaction can both take a waiter out of the line and make it the owner: judge the state
      // after all the events of one revision.
      const events = res.events;
      for (let i = 0; i < events.length; i++) {
        const ev = events[i];
        if (ev.kv.key.equals(ownerKey)) owner = ev.type === "Put" ? decodeOwner(ev.kv) : undefined;
        else if (ev.kv.key.equals(lockDelayKey)) lockDelay = ev.type === "Put" ? ev.kv : undefined;
        else waiting += ev.type === "Put" ? (ev.kv.version === "1" ? 1 : 0) : -1;
        if (events[i + 1]?.kv.mod_revision === ev.kv.mod_revision) continue;
        const state = stateOf(owner, lockDelay, waiting);
        if (state !== undefined && state !== reported) {
          reported = state;
          yield await report(BigInt(ev.kv.mod_revision));
        }
      }
    }
  } finally {
    await watch.close();
  }
}

/** What is reported: a holder's generation, a lock-delay, or a free resource; undefined during a handover. */
function stateOf(owner: Owner | undefined, lockDelay: IKeyValue | undefined, waiting: number): string | undefined {
  if (owner) return `held ${owner.generation}`;
  if (lockDelay) return `lock-delay ${lockDelay.create_revision}`;
  return waiting === 0 ? "free" : undefined;
}

function ownership(resource: string, owner: Owner | undefined, revision: bigint): Ownership {
  return owner
    ? { held: true, holder: owner.holder, holderPrincipal: owner.principal, token: { resource, generation: owner.generation, leaseId: owner.leaseId }, revision }
    : { held: false, revision };
}
