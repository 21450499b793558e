// What keeps a Lease alive: an etcd lease of its own (OwnLease), or a session that many leases share
// (Session, as etcd's concurrency.Session and Chubby's sessions). A keeper is what the KeepAlive stream
// renews and what has a deadline: the send time of its last confirmed renewal + TTL - drift margin. When
// it is lost (its deadline passed, or the server says it is gone) every lease it keeps is lost with it,
// at once; a lease that ends on its own (released, fenced, canceled) leaves a session to the others.
import type { Instant } from "./clock.js";
import { Deadline } from "./deadline.js";
import { LeaseNotFoundError, PreemptedError, type FencekeeperError, type LossCause } from "./errors.js";
import type { Emitter } from "./events.js";
import type { KeepAlive, Renewable } from "./keepalive.js";
import type { Token } from "./token.js";

export interface KeeperContext {
  readonly keepAlive: KeepAlive;
  readonly emit: Emitter;
  readonly driftMs: (ttlMs: number) => number;
  /** Gives an acquisition up on the server; never throws (an unreachable server lets it expire). */
  release(token: Token): Promise<void>;
  /** Closes a session on the server; never throws. */
  closeSession(sessionId: bigint): Promise<void>;
}

/** How a keeper ends one of its leases: why, what caused it, and the promise of the cleanup on the server. */
/** What a keeper knows of a lease it keeps (lease.ts's Lease is one): its token. */
export interface KeptLease {
  readonly token: Token;
}

export type EndLease = (why: LossCause, cause: unknown, ending: Promise<void>) => void;

const done = Promise.resolve();

/** How a keeper is lost: its deadline passed, or the server says it is gone or was preempted (nothing to release then). */
export type KeeperLoss = "deadline" | "not-found" | "preempted";

export abstract class Keeper implements Renewable {
  /** The etcd lease: the lease's own, or the session's. */
  readonly leaseId: bigint;
  /** The TTL etcd granted, in ms. */
  readonly ttlMs: number;
  readonly intervalMs: number;
  readonly deadline: Deadline;
  /** Whether many leases share it (a session). */
  abstract readonly shared: boolean;
  /** Set once the keeper has ended: why. */
  protected endedWhy?: LossCause;
  private readonly firstRenewalAt: number;

  constructor(
    leaseId: bigint,
    ttlMs: number,
    sentAt: Instant,
    answeredAt: Instant,
    protected readonly ctx: KeeperContext,
  ) {
    this.leaseId = leaseId;
    this.ttlMs = ttlMs;
    this.intervalMs = ttlMs / 3;
    this.deadline = new Deadline(sentAt, ttlMs, answeredAt, ctx.driftMs);
    this.firstRenewalAt = sentAt.mono + this.intervalMs;
  }

  /** Starts renewing: the first renewal goes out a renewal interval after the grant was sent. */
  start(): void {
    if (this.endedWhy === undefined) this.ctx.keepAlive.add(this, this.firstRenewalAt);
  }

  get ended(): boolean {
    return this.endedWhy !== undefined;
  }

  /** Looks at the clock: the keeper, and every lease it keeps, is lost once its deadline has passed. */
  expireIfPassed(): boolean {
    if (this.endedWhy === undefined && this.deadline.passed()) this.lose("deadline");
    return this.endedWhy !== undefined;
  }

  confirmed(sentAt: Instant, ttlMs: number, at: Instant): void {
    if (this.endedWhy !== undefined) return;
    if (!this.deadline.confirm(sentAt, ttlMs, at)) return this.lose("deadline");
    if (this.ctx.emit.listening) this.renewed(sentAt, ttlMs, at);
  }

  refused(error: FencekeeperError): void {
    if (this.endedWhy !== undefined) return;
    if (error instanceof LeaseNotFoundError) this.lose("not-found", error);
    else if (error instanceof PreemptedError) this.lose("preempted", error);
    else this.renewalFailed(error);
  }

  /** Takes `lease` on; `end` ends it when the keeper is lost. */
  abstract attach(lease: KeptLease, end: EndLease): void;
  /** A lease ended on its own (released, fenced, canceled): the cleanup on the server, as a promise. */
  abstract leaseEnded(lease: KeptLease, why: LossCause): Promise<void>;
  /** The keeper is lost (its deadline passed, or the server says it is gone), and every lease on it. */
  abstract lose(why: KeeperLoss, cause?: unknown): void;
  protected abstract renewed(sentAt: Instant, ttlMs: number, at: Instant): void;
  protected abstract renewalFailed(error: FencekeeperError): void;
}

/** An etcd lease that backs one acquisition alone. */
export class OwnLease extends Keeper {
  readonly shared = false;
  private lease?: KeptLease;
  private end?: EndLease;

  constructor(
    leaseId: bigint,
    ttlMs: number,
    sentAt: Instant,
    answeredAt: Instant,
    ctx: KeeperContext,
    /** Acquired with a lock-delay: if lost at its deadline, it is left to expire, so that the delay applies. */
    private readonly lockDelay = false,
  ) {
    super(leaseId, ttlMs, sentAt, answeredAt, ctx);
  }

  attach(lease: KeptLease, end: EndLease): void {
    this.lease = lease;
    this.end = end;
  }

  leaseEnded(lease: KeptLease, why: LossCause): Promise<void> {
    if (this.endedWhy === undefined) {
      this.endedWhy = why;
      this.ctx.keepAlive.remove(this.leaseId);
    }
    return this.ctx.release(lease.token);
  }

  lose(why: KeeperLoss, cause?: unknown): void {
    if (this.endedWhy !== undefined) return;
    this.endedWhy = why;
    this.ctx.keepAlive.remove(this.leaseId);
    // A lease the server says is gone needs no release; one past its deadline may still be held in etcd,
    // and is released then, unless it has a lock-delay: releasing would end, without the delay, a lease
    // whose writes sent before the deadline may still be on their way, which is what the delay is for.
    const release = why === "deadline" && this.lease && !this.lockDelay;
    this.end?.(why, cause, release ? this.ctx.release(this.lease!.token) : done);
  }

  protected renewed(sentAt: Instant, ttlMs: number, at: Instant): void {
    if (!this.lease) return;
    this.ctx.emit({
      type: "renewed",
      token: this.lease.token,
      sentAt: new Date(sentAt.wall),
      confirmedAt: new Date(at.wall),
      ttlMs,
      validUntil: this.deadline.validUntil,
    });
  }

  protected renewalFailed(error: FencekeeperError): void {
    if (this.lease) this.ctx.emit({ type: "renewal-failed", token: this.lease.token, error });
  }
}

/**
 * A session: one etcd lease that many acquisitions share. One renewal keeps them all; each still has a
 * generation and a token of its own (whose leaseId is the session id), and Release ends one of them.
 */
export class Session extends Keeper {
  readonly shared = true;
  private readonly leases = new Map<KeptLease, EndLease>();
  private closing?: Promise<void>;

  constructor(sessionId: bigint, ttlMs: number, sentAt: Instant, answeredAt: Instant, ctx: KeeperContext) {
    super(sessionId, ttlMs, sentAt, answeredAt, ctx);
    ctx.emit({ type: "session-opened", sessionId, ttlMs, validUntil: this.deadline.validUntil });
  }

  attach(lease: KeptLease, end: EndLease): void {
    // A session that has ended takes no lease: one attached too late is lost with it.
    if (this.endedWhy !== undefined) end(this.endedWhy, undefined, this.closing ?? done);
    else this.leases.set(lease, end);
  }

  leaseEnded(lease: KeptLease): Promise<void> {
    // Only this acquisition ends; the session and its other leases live on.
    this.leases.delete(lease);
    return this.ctx.release(lease.token);
  }

  lose(why: KeeperLoss, cause?: unknown): void {
    if (this.endedWhy !== undefined) return;
    // Past its deadline the session may still be alive in etcd: close it, so that its resources pass on now.
    this.finish(why, cause, why === "deadline" ? this.ctx.closeSession(this.leaseId) : done);
  }

  /** Ends every lease on the session as released and closes it on the server (client.close()). */
  close(): Promise<void> {
    if (this.endedWhy === undefined) this.finish("released", undefined, this.ctx.closeSession(this.leaseId));
    return this.closing ?? done;
  }

  private finish(why: LossCause, cause: unknown, closing: Promise<void>): void {
    this.endedWhy = why;
    this.closing = closing;
    this.ctx.keepAlive.remove(this.leaseId);
    const leases = [...this.leases.values()];
    this.leases.clear();
    this.ctx.emit({ type: "session-ended", sessionId: this.leaseId, why, leases: leases.length });
    for (const end of leases) end(why, cause, closing);
  }

  protected renewed(sentAt: Instant, ttlMs: number, at: Instant): void {
    this.ctx.emit({
      type: "session-renewed",
      sessionId: this.leaseId,
      leases: this.leases.size,
      sentAt: new Date(sentAt.wall),
      confirmedAt: new Date(at.wall),
      ttlMs,
      validUntil: this.deadline.validUntil,
    });
  }

  protected renewalFailed(error: FencekeeperError): void {
    this.ctx.emit({ type: "session-renewal-failed", sessionId: this.leaseId, error });
  }
}
