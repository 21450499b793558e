// The lease coordinator: who holds a resource, in which generation, and who waits. Acquire is in
// acquisition.ts and Observe in observe.ts; this is the rest: renewal, release, description, sessions.
import { DomainError, leaseNotFound } from "../errors/errors.js";
import { kindOf, refusalOf, type RenewalVia } from "../events/events.js";
import type { Token } from "../tokens/token.js";
import { checkHolder, checkLeaseId, checkResource, checkToken, ttlSeconds } from "../validation/validate.js";
import { acquisitionBytes, giveBackLeaseBytes } from "../budgets/lease-bytes.js";
import { decodeGeneration, decodeOwner, decodePreempted, type KeyLayout, type Owner, encodeHolder, holderKeyOf, holds, lastIssuedOf } from "../etcd/keys.js";
import { op } from "../etcd/ops.js";
import { reads, Reads } from "../etcd/reads.js";
import { acquire, type AcquireDeps, type AcquireParams, type Grant } from "./acquisition.js";
import type { TokenChecks } from "../tokens/checks.js";
import type { TokenSigner } from "../tokens/signer.js";
import { signatureShownTo } from "../tokens/disclosure.js";
import { BindingReads, bindOps, StreamBindings } from "./bindings.js";
import { claimLeaseSlot } from "./lease-cap.js";
import { liftLockDelay, lockDelayState, releaseWrites, type LockDelayState } from "./lock-delay.js";
import { holderState, observe, type HolderState, type Ownership } from "./observe.js";
import { proclaim } from "./proclaim.js";
import { listInUse, listingTokenAt, type ListParams } from "./listing.js";
import { ownershipBytes, withinBudget } from "./observe-budget.js";
import { CoalescingQueue, type BufferPool } from "../streams/coalescing-queue.js";
import { describedBytes, holdersAfter, holdersPage, holdersPageToken } from "./describe-page.js";
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
  /** Set when holders stops before the last shared holder (the answer budget): where the next page starts. */
  nextHoldersPageToken?: string;
}

/** What one description may hold, and from which holder it starts. */
export interface DescribePage {
  /** Bytes the description may take (answers/budget.ts); at least one holder is described whatever its size. */
  maxBytes: number;
  /** A previous description's nextHoldersPageToken; empty: from the oldest holder. */
  holdersPageToken?: string;
  /**
   * The TTLs already asked for by the call, by lease: a ListResources page of resources held on a few
   * sessions asks etcd once a session, not once a resource.
   */
  ttls?: Map<bigint, Promise<number>>;
}

/** Most holders whose TTL one Describe reads from etcd (one call each): the oldest ones. */
export const MAX_HOLDER_TTLS = 100;
/** Most resources ListResources describes at once. */
const LIST_DESCRIBES = 16;

export interface CoordinatorDeps extends AcquireDeps {
  signer: TokenSigner;
  tokens: TokenChecks;
}

/** What describing a resource reads: six ranges, in one transaction with others' when listing. */
function describeReads(keys: KeyLayout, resource: string) {
  const [line, lineEnd] = keys.lineRange(resource);
  return reads({
    owner: { key: keys.ownerKey(resource) },
    line: { key: line, range_end: lineEnd, count_only: true },
    fence: { key: keys.fenceKey(resource) },
    issued: { key: keys.issuedKey(resource) },
    shared: sharedHolders(keys, resource),
    lockDelay: { key: keys.lockDelayKey(resource) },
  });
}

type DescribeFound = ReturnType<typeof describeReads> extends Reads<infer T> ? T : never;

export class LeaseCoordinator {
  private readonly tokens: TokenChecks;
  /** Binding reads of renewals, in turn per caller. */
  private readonly bindingReads: BindingReads;

  constructor(private readonly d: CoordinatorDeps) {
    this.tokens = d.tokens;
    this.bindingReads = new BindingReads(d);
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
      // RESOURCE_HELD carries the holder's token, as Describe shows it to this caller (disclosure.ts).
      if (err instanceof DomainError && err.token) {
        const token = await this.shownToken({ ...err.token, principal: err.metadata.holder_principal ?? "" }, p.principal);
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
      else if (!o.bindings && o.principal !== undefined) await this.bindingReads.check(o.caller ?? "", leaseId, o.principal);
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

  /**
   * The bindings of one KeepAlive stream of this principal, read in caller's turn (a principal or a
   * connection, as renewals take turns); `allowed`: what else a renewal needs (the policy).
   */
  streamBindings(principal: string, caller: string, allowed?: (leaseId: bigint) => Promise<void> | undefined): StreamBindings {
    return new StreamBindings(this.bindingReads, caller, principal, allowed);
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

  /**
   * viewer: the caller's principal (undefined without authentication): whose tokens it sees signed
   * (disclosure.ts). page: the answer budget, and where the holders start (describe-page.ts).
   */
  async describe(resource: string, viewer: string | undefined, page: DescribePage): Promise<Description> {
    checkResource(resource);
    const after = holdersAfter(page.holdersPageToken ?? "");
    const { found } = await this.d.reader.snapshot("describe", describeReads(this.d.keys, resource));
    return this.described(resource, found, after, viewer, page);
  }

  /** The description of a resource from what describeReads found. */
  private async described(resource: string, found: DescribeFound, after: bigint, viewer: string | undefined, page: DescribePage): Promise<Description> {
    const { leases } = this.d;
    const { owner, fence, issued, shared, lockDelay } = found;
    const exclusive = owner.kvs[0] ? decodeOwner(owner.kvs[0]) : undefined;
    const all: { o: Owner; mode: "exclusive" | "shared" }[] = exclusive ? [{ o: exclusive, mode: "exclusive" }] : decodeShared(shared.kvs).map((o) => ({ o, mode: "shared" }));
    const { owners, more } = holdersPage(resource, all, after, page.maxBytes);
    // Each holder's token, signed only for its own principal (disclosure.ts): a signature is a
    // credential wherever tokens are verified offline. A TTL is an etcd call of its own: only the oldest
    // holders' are read, so that a resource with thousands of shared holders costs one Describe a
    // bounded number of them.
    const ttlOf = (id: bigint) => {
      if (!page.ttls) return leases.timeToLive(id);
      let ttl = page.ttls.get(id);
      if (!ttl) page.ttls.set(id, (ttl = leases.timeToLive(id)));
      return ttl;
    };
    const holders = await Promise.all(
      owners.map(async ({ o, mode }, i) => {
        if (i >= MAX_HOLDER_TTLS) return this.shown(holderState(resource, o, mode), viewer);
        const [holder, ttl] = await Promise.all([this.shown(holderState(resource, o, mode), viewer), ttlOf(o.leaseId)]);
        return { ...holder, ttlSeconds: Math.max(0, ttl) };
      }),
    );
    const description: Description = {
      held: all.length > 0,
      holders,
      holdersWithoutTtl: Math.max(0, holders.length - MAX_HOLDER_TTLS),
      maxHolders: exclusive ? 0 : maxHoldersOf(decodeShared(shared.kvs)),
      waiters: Number(found.line.count),
      fence: decodeGeneration(fence.kvs[0]?.value),
      lastIssued: lastIssuedOf(issued.kvs[0]),
      ...(await lockDelayState(leases, lockDelay.kvs[0], owner.kvs.length > 0)),
      ...(more ? { nextHoldersPageToken: holdersPageToken(owners[owners.length - 1].o.generation) } : {}),
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

  /**
   * The resources in use, a page at a time (listing.ts), each as describe() describes it, until the
   * page would pass maxBytes: it then ends before that resource, and its token starts there. The first
   * resource is always listed; when its holders alone pass the budget, with its first holders only.
   */
  async listResources(p: ListParams, viewer: string | undefined, maxBytes: number): Promise<{ resources: { resource: string; description: Description }[]; nextPageToken: string }> {
    const page = await listInUse(this.d, p);
    const resources: { resource: string; description: Description }[] = [];
    let left = maxBytes;
    const ttls = new Map<bigint, Promise<number>>();
    // A few describes at a time: a page may name a thousand resources, and each may carry a 1 MiB
    // value. One first, then twice as many each round up to LIST_DESCRIBES, so that a page of large
    // values reads from etcd little more than it sends.
    // Each round's resources are read in one transaction (six ranges each: LIST_DESCRIBES of them stay
    // within etcd's 128 operations), not one transaction each.
    for (let i = 0, n = 1; i < page.resources.length; i += n, n = Math.min(2 * n, LIST_DESCRIBES)) {
      const part = page.resources.slice(i, i + n);
      const { found } = await this.d.reader.snapshot("describe", Reads.all(part.map((resource) => describeReads(this.d.keys, resource))));
      const described = await Promise.all(part.map(async (resource, j) => ({ resource, description: await this.described(resource, found[j], 0n, viewer, { maxBytes: Math.max(left, 1), ttls }) })));
      for (const r of described) {
        const bytes = describedBytes(r.resource, r.description);
        const first = resources.length === 0;
        if (!first && (bytes > left || r.description.nextHoldersPageToken)) {
          return { resources, nextPageToken: listingTokenAt(this.d.keys, r.resource) };
        }
        resources.push(r);
        left -= bytes;
      }
    }
    return { resources, nextPageToken: page.nextPageToken };
  }

  /** A holder as viewer may see it: its token signed only when viewer is its principal (disclosure.ts). */
  private async shown(h: HolderState, viewer: string | undefined): Promise<HolderState> {
    return { ...h, token: await this.shownToken({ ...h.token, principal: h.holderPrincipal ?? "" }, viewer) };
  }

  /** The token with its principal; signed for that principal alone, else without key id and signature. */
  private async shownToken(t: Token, viewer: string | undefined): Promise<Token> {
    if (signatureShownTo(t.principal, viewer)) return this.d.signer.sign(t);
    const { keyId: _k, signature: _s, ...unsigned } = t;
    return { ...unsigned, principal: t.principal ?? "" };
  }

  /**
   * Ownership changes, each holder's token shown to viewer as Describe shows it, each message within
   * maxBytes (observe-budget.ts). The watch is drained as fast as etcd sends (a pump into the queue);
   * what waits for a slow reader is bounded by buffer, past which its reader is told it missed changes
   * (streams/coalescing-queue.ts).
   */
  async *observe(resource: string, signal: AbortSignal, viewer: string | undefined, o: { maxBytes: number; buffer: { maxBytes: number; pool: BufferPool } }): AsyncGenerator<Ownership> {
    const sign = (hs: HolderState[]) => Promise.all(hs.map((h) => this.shown(h, viewer)));
    const queue = new CoalescingQueue<Ownership>(o.buffer.maxBytes, o.buffer.pool, (x) => ownershipBytes(resource, x));
    const stop = new AbortController();
    let failure: { err: unknown } | undefined;
    const pump = (async () => {
      try {
        for await (const x of observe(this.d, resource, AbortSignal.any([signal, stop.signal]))) queue.push(withinBudget(resource, x, o.maxBytes));
      } catch (err) {
        failure = { err };
      } finally {
        queue.close();
      }
    })();
    try {
      for await (const { item, missed } of queue) {
        const [holders, joined, left] = await Promise.all([sign(item.holders), sign(missed ? [] : item.joined), sign(missed ? [] : item.left)]);
        yield { ...item, holders, joined, left, ...(item.token ? { token: holders[0].token } : {}), ...(missed ? { missedChanges: true } : {}) };
      }
      if (failure) throw failure.err;
    } finally {
      stop.abort();
      queue.close();
      await pump;
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
    if (principal !== undefined) await this.bindingReads.check(`principal ${principal}`, sessionId, principal, "session");
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
