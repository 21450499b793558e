// The lease coordinator: who holds a resource, in which generation, and who waits. Acquire is in
// acquisition.ts and Observe in observe.ts; this is the rest: renewal, release, description, sessions.
import { DomainError, leaseNotFound } from "../domain/errors.js";
import type { Token } from "../domain/token.js";
import { checkHolder, checkLeaseId, checkResource, checkToken, ttlSeconds } from "../domain/validate.js";
import { decodeGeneration, decodeOwner, encodeHolder, holds, lastIssuedOf } from "../etcd/keys.js";
import { op } from "../etcd/ops.js";
import { prefixRange } from "../etcd/reader.js";
import { acquire, type AcquireDeps, type AcquireParams, type Grant } from "./acquisition.js";
import { observe, type Ownership } from "./observe.js";

export type { AcquireParams, Grant, Ownership };

export interface Description {
  held: boolean;
  holder?: string;
  token?: Token;
  ttlSeconds?: number;
  waiters: number;
  fence: bigint;
  lastIssued: bigint;
}

export class LeaseCoordinator {
  constructor(private readonly d: AcquireDeps) {}

  acquire(p: AcquireParams, signal: AbortSignal): Promise<Grant> {
    return acquire(this.d, p, signal);
  }

  async renew(leaseId: bigint): Promise<number> {
    checkLeaseId(leaseId);
    const ttl = await this.d.leases.renew(leaseId);
    if (ttl <= 0) throw leaseNotFound(leaseId);
    return ttl;
  }

  /** Gives up exactly the generation of the token, never a newer one; a session lives on. */
  async release(token: Token | undefined): Promise<void> {
    const t = checkToken(token, "token");
    const { keys, committer, leases } = this.d;
    const ownerKey = keys.ownerKey(t.resource);
    const res = await committer.commit("release", {
      compare: holds(keys, t),
      success: [op.del(ownerKey), op.get(keys.sessionKey(t.leaseId))],
      failure: [],
    });
    if (!res.succeeded) {
      throw new DomainError(
        "not_found",
        `generation ${t.generation} of "${t.resource}" (lease ${t.leaseId}) is not held: it expired, was released, or never existed`,
        "LEASE_NOT_FOUND",
        { lease_id: String(t.leaseId), resource: t.resource, generation: String(t.generation) },
      );
    }
    // A lease of its own backed this acquisition alone: it goes too, so that renewing it says NOT_FOUND.
    // The release itself is done (the owner key is gone): the revocation does not hold up the answer.
    const onSession = res.responses[1].response_range.kvs.length > 0;
    if (!onSession) void leases.revokeEventually(t.leaseId);
  }

  async describe(resource: string): Promise<Description> {
    checkResource(resource);
    const { keys, reader, leases } = this.d;
    const snap = await reader.snapshot("describe", [
      { key: keys.ownerKey(resource) },
      prefixRange(keys.queuePrefix(resource), { count_only: true }),
      { key: keys.fenceKey(resource) },
      { key: keys.issuedKey(resource) },
    ]);
    const [owner, line, fence, issued] = snap.ranges;
    const description: Description = {
      held: owner.kvs.length > 0,
      waiters: Number(line.count),
      fence: decodeGeneration(fence.kvs[0]?.value),
      lastIssued: lastIssuedOf(issued.kvs[0]),
    };
    if (owner.kvs[0]) {
      const o = decodeOwner(owner.kvs[0]);
      description.holder = o.holder;
      description.token = { resource, generation: o.generation, leaseId: o.leaseId };
      description.ttlSeconds = Math.max(0, await leases.timeToLive(o.leaseId));
    }
    return description;
  }

  observe(resource: string, signal: AbortSignal): AsyncGenerator<Ownership> {
    return observe(this.d, resource, signal);
  }

  /** A session: one lease that many acquisitions share, marked as a session by a key on it. */
  async openSession(ttlMs: number | undefined, holder: string): Promise<{ sessionId: bigint; ttlSeconds: number }> {
    checkHolder(holder);
    const ttl = ttlSeconds(ttlMs, this.d.limits);
    const { keys, committer, leases } = this.d;
    const lease = await leases.grant(ttl);
    try {
      await committer.commit("open session", { compare: [], success: [op.put(keys.sessionKey(lease.id), encodeHolder({ holder }), lease.id)], failure: [] });
    } catch (err) {
      leases.revokeEventually(lease.id);
      throw err;
    }
    return { sessionId: lease.id, ttlSeconds: lease.ttlSeconds };
  }

  /** Ends a session: every acquisition on it is released at once, with its lease. */
  async closeSession(sessionId: bigint): Promise<void> {
    checkLeaseId(sessionId, "session_id");
    const { keys, reader, leases } = this.d;
    const found = await reader.range("close session", { key: keys.sessionKey(sessionId), count_only: true });
    if (Number(found.count) === 0 || !(await leases.revoke(sessionId))) {
      throw new DomainError(
        "not_found",
        `session ${sessionId} is not open: it expired, was closed, or never existed`,
        "LEASE_NOT_FOUND",
        { lease_id: String(sessionId) },
      );
    }
  }
}
