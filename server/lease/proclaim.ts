// Proclaim: the holder of a resource changes the value it published with its acquisition (an elected
// leader's address, say), without giving the resource up.
//
// The value lives in the key the grant created (the owner key, or a shared holder's key; keys.ts,
// encodeOwner), after the holder's label and nonce, which Proclaim writes back unchanged. A put on an
// existing key keeps its create revision, so the generation, and every token check, stay as they were.
// The write is one transaction that checks the token's generation still holds the key, on its lease,
// and that the key is as read (its mod revision): a token that no longer holds is refused as a stale
// write is, and two Proclaims of one holder racing each other never mix a label read before the other.
import type { IRangeResponse } from "etcd3";
import { DomainError } from "../errors/errors.js";
import type { DomainEvents } from "../events/events.js";
import type { Token } from "../tokens/token.js";
import { checkValue } from "../validation/validate.js";
import type { Committer } from "../etcd/committer.js";
import { decodeGeneration, decodeOwner, encodeOwner, holderKeyOf, holds, isHeldBy, lastIssuedOf, type KeyLayout } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import type { Reader } from "../etcd/reader.js";
import type { Limits } from "../validation/limits.js";
import { acquisitionBytes, chargeLeaseBytes, giveBackLeaseBytes } from "../budgets/lease-bytes.js";
import { reads } from "../etcd/reads.js";

export interface ProclaimDeps {
  keys: KeyLayout;
  limits: Pick<Limits, "maxBytesPerLease">;
  committer: Committer;
  reader: Reader;
  events: DomainEvents;
}

/** Another Proclaim of the same holder changed the key between the read and the write this many times in a row: give up. */
const MAX_ATTEMPTS = 10;

/** Sets the value of the token's acquisition: the revision at which it took effect. The token was checked (signature, principal). */
export async function proclaim(d: ProclaimDeps, t: Token, value: Uint8Array): Promise<bigint> {
  checkValue(value, "value");
  const { keys } = d;
  const holderKey = holderKeyOf(keys, t);
  const look = reads({ holder: { key: holderKey }, issued: { key: keys.issuedKey(t.resource) }, fence: { key: keys.fenceKey(t.resource) } });
  let found = (await d.reader.snapshot("proclaim", look)).found;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const kv = found.holder.kvs[0];
    if (!isHeldBy(kv, t)) throw refusal(d, t, found);
    const o = decodeOwner(kv);
    // A larger value is charged to the lease before it is written (budgets/lease-bytes.ts); a smaller one gives back once written.
    const delta = acquisitionBytes(t.resource, o.holder, value, o.principal || undefined) - acquisitionBytes(t.resource, o.holder, o.value, o.principal || undefined);
    if (delta > 0n) {
      try {
        await chargeLeaseBytes(d, t.leaseId, delta, d.limits.maxBytesPerLease);
      } catch (err) {
        // The lease ended after the read: the answer is the one of a token that no longer holds.
        if (!(err instanceof DomainError) || err.reason !== "LEASE_NOT_FOUND") throw err;
        found = (await d.reader.snapshot("proclaim", look)).found;
        throw isHeldBy(found.holder.kvs[0], t) ? err : refusal(d, t, found);
      }
    }
    let res;
    try {
      res = await d.committer.commit("proclaim", {
        compare: [...holds(keys, t), cmp.modAt(holderKey, BigInt(kv.mod_revision))],
        success: [op.put(holderKey, encodeOwner({ holder: o.holder, nonce: o.nonce, principal: o.principal || undefined, value }), t.leaseId)],
        failure: look.ops(),
      });
    } catch (err) {
      if (delta > 0n) void giveBackLeaseBytes(d, t.leaseId, delta);
      throw err;
    }
    if (res.succeeded) {
      if (delta < 0n) void giveBackLeaseBytes(d, t.leaseId, -delta);
      return res.revision;
    }
    if (delta > 0n) await giveBackLeaseBytes(d, t.leaseId, delta);
    found = look.decodeTxn(res.responses);
  }
  throw new DomainError(
    "aborted",
    `the value of generation ${t.generation} of "${t.resource}" was changed by ${MAX_ATTEMPTS} other Proclaims while this one was trying; send it again`,
  );
}

/** Why a token that no longer holds its resource may not proclaim, in the words of a refused write. */
function refusal(d: ProclaimDeps, t: Token, found: { issued: IRangeResponse; fence: IRangeResponse }): DomainError {
  const g = t.generation;
  const lastIssued = lastIssuedOf(found.issued.kvs[0]);
  const fence = decodeGeneration(found.fence.kvs[0]?.value);
  const meta = { resource: t.resource, generation: String(g) };
  const refuse = (reason: "STALE_TOKEN" | "LEASE_NOT_HELD" | "GENERATION_NOT_ISSUED", message: string, more: Record<string, string>) => {
    d.events.emit({ type: "refused", operation: "proclaim", resource: t.resource, reason });
    return new DomainError("failed_precondition", message, reason, { ...meta, ...more });
  };
  if (lastIssued < g) {
    return refuse("GENERATION_NOT_ISSUED", `generation ${g} was never issued for "${t.resource}" (the last issued is ${lastIssued}); use a token returned by Acquire`, {
      last_issued: String(lastIssued),
    });
  }
  // An exclusive generation is stale once a newer one was granted, whether or not it has written yet:
  // that newer one is the leader now. Shared holders outlive newer shared grants; only the fence dates them.
  if (fence > g || (t.mode !== "shared" && lastIssued > g)) {
    return refuse(
      "STALE_TOKEN",
      `stale token: generation ${g} of "${t.resource}" no longer holds it, and a newer generation (the last issued is ${lastIssued}, the fence ${fence}) ` +
        "has been granted since; this holder has lost the resource and must stop",
      { fence: String(fence), last_issued: String(lastIssued) },
    );
  }
  return refuse("LEASE_NOT_HELD", `lease ${t.leaseId} of generation ${g} of "${t.resource}" is no longer held (it expired or was released); acquire again`, {
    lease_id: String(t.leaseId),
  });
}
