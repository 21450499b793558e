// The lease coordinator: who holds a resource, in which generation, and who waits. Acquire is in
// acquisition.ts and Observe in observe.ts; this is the rest: renewal, release, description, sessions.
import { DomainError, leaseNotFound } from "../errors/errors.js";
import { kindOf, refusalOf, type RenewalVia } from "../events/events.js";
import type { Token } from "../tokens/token.js";
import { checkHolder, checkLeaseId, checkResource, checkToken, ttlSeconds } from "../validation/validate.js";
import { acquisitionBytes, giveBackLeaseBytes } from "../budgets/lease-bytes.js";
import { decodeGeneration, decodeOwner, decodePreempted, encodeHolder, holderKeyOf, holds, lastIssuedOf } from "../etcd/keys.js";
import { op } from "../etcd/ops.js";
import { reads } from "../etcd/reads.js";
import { acquire, type AcquireDeps, type AcquireParams, type Grant } from "./acquisition.js";
import type { TokenChecks } from "../tokens/checks.js";
import type { TokenSigner } from "../tokens/signer.js";
import { bindOps, checkBound, StreamBindings } from "./bindings.js";
import { claimLeaseSlot } from "./lease-cap.js";
import { liftLockDelay, lockDelayState, releaseWrites, type LockDelayState } from "./lock-delay.js";
import { holderState, observe, type HolderState, type Ownership } from "./observe.js";
import { proclaim } from "./proclaim.js";
import { listInUse, type ListParams } from "./listing.js";
import { maxHoldersOf } from "./semaphore.js";
import { preemptedError } from "./preemption.js";
import { decodeShared, sharedHolders } from "./shared.js";

export type { AcquireParams, Grant, HolderState, Ownership };

export interface Description extends LockDelayState {
  /** Held exclusively, or by shared holders. */
  held: boolean;
  /** The exclusive holder's label, principal, token, TTL and value; unset when the holders are shared. */
  holder?: string;
  value?: Uint8Array;
  /** The principal that acquired it, with authentication on. */
  holderPrincipal?: string;
  token?: Token;
  ttlSeconds?: number;
  /** Every holder: the exclusive one, or the shared ones, oldest first; ttlSeconds of the first MAX_HOLDER_TTLS only. */
  holders: HolderState[];
  /** How many holders, the newest past MAX_HOLDER_TTLS, are listed without their TTL. */
  holdersWithoutTtl: number;
  /** The shared holders' semaphore size (semaphore.ts); 0 when they are not a semaphore's. */
  maxHolders: number;
  waiters: number;
  fence: bigint;
  lastIssued: bigint;
}

/** Most holders whose TTL one Describe reads from etcd (one call each): the oldest ones. */
export const MAX_HOLDER_TTLS = 100;

export interface CoordinatorDeps extends AcquireDeps {
  signer: TokenSigner;
  tokens: TokenChecks;
}

export class LeaseCoordinator {
  private readonly tokens: TokenChecks;

  constructor(private readonly d: CoordinatorDeps) {
    this.tokens = d.tokens;
  }

  /** Acquires, and signs the token for the principal (if any) that acquired it. */
  async acquire(p: AcquireParams, signal: AbortSignal): Promise<Grant> {
    // The key first: a grant whose token could not be signed would leave a holder nobody knows of.
    await this.d.signer.ready();
    let grant: Grant;
    try {
      grant = await acquire(this.d, p, signal);
    } catch (err) {
      const reason = refusalOf(err);
      if (reason) this.d.events.emit({ type: "refused", operation: "acquire", resource: p.resource, reason });
      // RESOURCE_HELD carries the holder's token, signed as Describe shows it.
      if (err instanceof DomainError && err.token) {
        const token = await this.d.signer.sign({ ...err.token, principal: err.metadata.holder_principal ?? "" });
        throw new DomainError(err.kind, err.message, err.reason, err.metadata, token);
      }
      throw err;
    }
    for (const h of grant.preempted ?? []) {
      this.d.events.emit({ type: "preempted", resource: p.resource, generation: h.generation, leaseId: h.leaseId, byGeneration: grant.token.generation, byPrincipal: p.principal ?? "" });
    }
    this.d.events.emit({ type: "granted", resource: p.resource, generation: grant.token.generation, leaseId: grant.token.leaseId, onSession: Boolean(p.sessionId), ttlSeconds: grant.ttlSeconds, waited: grant.waited, mode: grant.token.mode ?? "exclusive" });
    return { ...grant, token: await this.d.signer.sign({ ...grant.token, principal: p.principal ?? "" }) };
  }

  /** The public keys that verify tokens, the signing one first. */
  tokenKeys() {
    return this.d.signer.list();
  }

  /**
   * Renews a lease. With principal (authentication on), only a lease bound to it: an acquisition's or a
   * session's, made by that principal. `bindings`: the stream's cache of leases already checked instead.
   * `caller`: who asks, so that renewals of many callers take turns (etcd/leases.ts). `via`: the call
   * that asked, for the events.
   */
  async renew(
    leaseId: bigint,
    o: { principal?: string; bindings?: StreamBindings; caller?: string; via?: RenewalVia; allowed?: (leaseId: bigint) => Promise<void> | undefined } = {},
  ): Promise<number> {
    const { events } = this.d;
    const via = o.via ?? "Renew";
    try {
      checkLeaseId(leaseId);
      const checking = o.bindings?.check(leaseId);
      if (checking) await checking;
      else if (!o.bindings && o.principal !== undefined) await checkBound(this.d, leaseId, o.principal);
      if (!o.bindings) await o.allowed?.(leaseId);
      // A preempted lease is refused from memory (preemption.ts): no etcd read per renewal.
      const preempted = this.d.preempted?.of(leaseId);
      if (preempted) throw preemptedError(leaseId, preempted);
      const ttl = await this.d.leases.renew(leaseId, o.caller);
      if (ttl <= 0) {
        events.emit({ type: "lease gone", leaseId });
        throw leaseNotFound(leaseId);
      }
      events.emit({ type: "renewed", leaseId, ttlSeconds: ttl, via });
      return ttl;
    } catch (err) {
      events.emit({ type: "not renewed", leaseId, via, kind: kindOf(err) });
      throw err;
    }
  }

  /** The bindings of one KeepAlive stream of this principal; `allowed`: what else a renewal needs (the policy). */
  streamBindings(principal: string, allowed?: (leaseId: bigint) => Promise<void> | undefined): StreamBindings {
    return new StreamBindings(this.d, principal, allowed);
  }

  /** The resources a lease holds (exclusively, or as one of their shared holders): none when it is gone. */
  async heldResources(leaseId: bigint): Promise<string[]> {
    const resources = (await this.d.leases.keysOf(leaseId)).map((k) => this.d.keys.heldResourceOf(k));
    return [...new Set(resources.filter((r): r is string => r !== undefined))];
  }

  /**
   * Gives up exactly the generation of the token, never a newer one; a session lives on. With principal,
   * only the principal's own token (server/tokens/checks.ts: signed, and issued to it).
   */
  async release(token: Token | undefined, principal?: string): Promise<void> {
    const t = checkToken(token, "token");
    const { keys, committer, leases } = this.d;
    await this.tokens.check(t, principal, "token");
    const session = reads({ session: { key: keys.sessionKey(t.leaseId) }, holder: { key: holderKeyOf(keys, t) } });
    const preempted = reads({ session: { key: keys.sessionKey(t.leaseId) }, record: { key: keys.preemptedKey(t.leaseId) } });
    const res = await committer.commit("release", {
      compare: holds(keys, t),
      // A release ends the acquisition without its lock-delay: the lock-delay key goes with the owner key.
      success: [...session.ops(), op.del(holderKeyOf(keys, t)), ...(t.mode === "shared" ? [] : releaseWrites(keys, t))],
      failure: preempted.ops(),
    });
    if (!res.succeeded) {
      // A preempted acquisition is given back as a held one is: its lease (and cap slot) ends at once.
      const found = preempted.decodeTxn(res.responses);
      const record = found.record.kvs[0] && decodePreempted(found.record.kvs[0].value);
      if (record && record.resource === t.resource && record.generation === t.generation) {
        const onSession = found.session.kvs.length > 0;
        if (!onSession) await leases.revoke(t.leaseId);
        this.d.events.emit({ type: "released", resource: t.resource, generation: t.generation, leaseId: t.leaseId, onSession });
        return;
      }
      this.d.events.emit({ type: "refused", operation: "release", resource: t.resource, reason: "LEASE_NOT_FOUND" });
      throw new DomainError(
        "not_found",
        `generation ${t.generation} of "${t.resource}" (lease ${t.leaseId}) is not held: it expired, was released, or never existed`,
        "LEASE_NOT_FOUND",
        { lease_id: String(t.leaseId), resource: t.resource, generation: String(t.generation) },
      );
    }
    // A lease of its own backed this acquisition alone: it goes too, so that renewing it says NOT_FOUND.
    // The release itself is done (the owner key is gone): the revocation does not hold up the answer.
    // On a session, the acquisition's bytes are given back to the session (budgets/lease-bytes.ts).
    const done = session.decodeTxn(res.responses);
    const onSession = done.session.kvs.length > 0;
    this.d.events.emit({ type: "released", resource: t.resource, generation: t.generation, leaseId: t.leaseId, onSession });
    if (!onSession) void leases.revokeEventually(t.leaseId);
    else if (done.holder.kvs[0]) {
      const o = decodeOwner(done.holder.kvs[0]);
      const bytes = acquisitionBytes(t.resource, o.holder, o.value, o.principal || undefined);
      if (bytes > 0n) await giveBackLeaseBytes(this.d, t.leaseId, bytes);
    }
  }

  /**
   * Changes the value published by the token's acquisition (proclaim.ts): the revision at which it took
   * effect. With principal, only the principal's own token (server/tokens/checks.ts: signed, and issued to it).
   */
  async proclaim(token: Token | undefined, value: Uint8Array, principal?: string): Promise<bigint> {
    const t = checkToken(token, "token");
    await this.tokens.check(t, principal, "token");
    return proclaim(this.d, t, value);
  }

  /** Ends the lock-delay served on a resource, if any (lock-delay.ts). The caller was authorized as its admin. */
  liftLockDelay(resource: string): Promise<{ lifted: boolean; generation: bigint }> {
    checkResource(resource);
    return liftLockDelay(this.d, resource);
  }

  async describe(resource: string): Promise<Description> {
    checkResource(resource);
    const { keys, reader, leases } = this.d;
    const [line, lineEnd] = keys.lineRange(resource);
    const { found } = await reader.snapshot(
      "describe",
      reads({
        owner: { key: keys.ownerKey(resource) },
        line: { key: line, range_end: lineEnd, count_only: true },
        fence: { key: keys.fenceKey(resource) },
        issued: { key: keys.issuedKey(resource) },
        shared: sharedHolders(keys, resource),
        lockDelay: { key: keys.lockDelayKey(resource) },
      }),
    );
    const { owner, fence, issued, shared, lockDelay } = found;
    const exclusive = owner.kvs[0] ? decodeOwner(owner.kvs[0]) : undefined;
    const owners = exclusive ? [{ o: exclusive, mode: "exclusive" as const }] : decodeShared(shared.kvs).map((o) => ({ o, mode: "shared" as const }));
    // Each holder's token as Acquire gave it, signature included: with authentication on, it is of no
    // use to anyone but its principal, and without, anyone may write anyway. A TTL is an etcd call of its
    // own: only the oldest holders' are read, so that a resource with thousands of shared holders costs
    // one Describe a bounded number of them.
    const holders = await Promise.all(
      owners.map(async ({ o, mode }, i) => {
        if (i >= MAX_HOLDER_TTLS) return this.signed(holderState(resource, o, mode));
        const [holder, ttl] = await Promise.all([this.signed(holderState(resource, o, mode)), leases.timeToLive(o.leaseId)]);
        return { ...holder, ttlSeconds: Math.max(0, ttl) };
      }),
    );
    const description: Description = {
      held: holders.length > 0,
      holders,
      holdersWithoutTtl: Math.max(0, holders.length - MAX_HOLDER_TTLS),
      maxHolders: exclusive ? 0 : maxHoldersOf(decodeShared(shared.kvs)),
      waiters: Number(found.line.count),
      fence: decodeGeneration(fence.kvs[0]?.value),
      lastIssued: lastIssuedOf(issued.kvs[0]),
      ...(await lockDelayState(leases, lockDelay.kvs[0], owner.kvs.length > 0)),
    };
    if (exclusive) {
      const h = holders[0];
      description.holder = h.holder;
      if (h.holderPrincipal) description.holderPrincipal = h.holderPrincipal;
      description.token = h.token;
      description.ttlSeconds = h.ttlSeconds;
      if (h.value) description.value = h.value;
    }
    return description;
  }

  /** The resources in use, a page at a time (listing.ts), each as describe() describes it. */
  async listResources(p: ListParams): Promise<{ resources: { resource: string; description: Description }[]; nextPageToken: string }> {
    const page = await listInUse(this.d, p);
    const resources: { resource: string; description: Description }[] = [];
    // A bounded number of describes at a time: a page may name a thousand resources.
    for (let i = 0; i < page.resources.length; i += 32) {
      const part = page.resources.slice(i, i + 32);
      resources.push(...(await Promise.all(part.map(async (resource) => ({ resource, description: await this.describe(resource) })))));
    }
    return { resources, nextPageToken: page.nextPageToken };
  }

  /** A holder with its token signed, for its principal. */
  private async signed(h: HolderState): Promise<HolderState> {
    return { ...h, token: await this.d.signer.sign({ ...h.token, principal: h.holderPrincipal ?? "" }) };
  }

  /** Ownership changes, each holder's token signed as Describe signs it. */
  async *observe(resource: string, signal: AbortSignal): AsyncGenerator<Ownership> {
    const sign = (hs: HolderState[]) => Promise.all(hs.map((h) => this.signed(h)));
    for await (const o of observe(this.d, resource, signal)) {
      const [holders, joined, left] = await Promise.all([sign(o.holders), sign(o.joined), sign(o.left)]);
      yield { ...o, holders, joined, left, ...(o.token ? { token: holders[0].token } : {}) };
    }
  }

  /** A session: one lease that many acquisitions share, marked as a session by a key on it. */
  async openSession(ttlMs: number | undefined, holder: string, principal?: string): Promise<{ sessionId: bigint; ttlSeconds: number }> {
    checkHolder(holder);
    const ttl = ttlSeconds(ttlMs, this.d.limits);
    const { keys, committer, leases } = this.d;
    const lease = await leases.grant(ttl);
    try {
      if (principal !== undefined) await claimLeaseSlot(this.d, principal, this.d.limits.maxLeasesPerCaller, lease.id);
      const session = op.put(keys.sessionKey(lease.id), encodeHolder({ holder }), lease.id);
      const bind = principal !== undefined ? bindOps(keys, lease.id, principal) : [];
      await committer.commit("open session", { compare: [], success: [session, ...bind], failure: [] });
    } catch (err) {
      leases.revokeEventually(lease.id);
      throw err;
    }
    this.d.events.emit({ type: "session opened", sessionId: lease.id, ttlSeconds: lease.ttlSeconds });
    return { sessionId: lease.id, ttlSeconds: lease.ttlSeconds };
  }

  /** Ends a session: every acquisition on it is released at once, with its lease. */
  async closeSession(sessionId: bigint, principal?: string): Promise<void> {
    checkLeaseId(sessionId, "session_id");
    const { keys, reader, leases } = this.d;
    if (principal !== undefined) await checkBound(this.d, sessionId, principal, "session");
    const found = await reader.range("close session", { key: keys.sessionKey(sessionId), count_only: true });
    if (Number(found.count) === 0 || !(await leases.revoke(sessionId))) {
      throw new DomainError(
        "not_found",
        `session ${sessionId} is not open: it expired, was closed, or never existed`,
        "LEASE_NOT_FOUND",
        { lease_id: String(sessionId) },
      );
    }
    this.d.events.emit({ type: "session closed", sessionId });
  }
}
