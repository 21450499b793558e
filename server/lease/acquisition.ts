// One Acquire: from the request to a granted generation, or to an error that leaves nothing behind.
//
// The owner of a resource is its owner key; a grant creates it, and its create revision is the
// generation. A grant is one transaction that checks nobody holds or waits for the resource (or, for a
// waiter, that nobody waits ahead of it), creates the owner key on the acquisition's lease, and marks
// the generation issued, so that an uncontended Acquire is one etcd transaction after its lease grant
// (none on a session). A waiter joins the line with a key of its own and watches only the key just
// ahead of it: the waiter before it, or the owner key when it is first in line. Each handover costs the
// next waiter one watch event and one transaction, never a read of the whole line.
//
// An acquisition is exclusive or shared; shared.ts says whom each mode waits for, and what it checks.
//
// A waiter's place in line is on a lease that this call keeps alive while it waits: the acquisition's
// own lease, or, on a session, a place lease of its own (the session is renewed by its client only, and
// a place held on it would outlive a call that died with its server).
//
// No grant happens during a lock-delay (lock-delay.ts): a grant also checks that no lock-delay key
// exists, and the first in line waits for its deletion as for the owner key's.
import { randomBytes } from "node:crypto";
import type { IRangeResponse, IRequestOp, IResponseOp } from "etcd3";
import { DomainError, leaseNotFound, notHolder } from "../errors/errors.js";
import { EtcdLeaseNotFound } from "../etcd/classify.js";
import { inLine, type DomainEvents } from "../events/events.js";
import type { Limits } from "../validation/limits.js";
import type { AcquireMode, Token } from "../tokens/token.js";
import { checkHolder, checkLeaseId, checkResource, checkValue, ttlSeconds } from "../validation/validate.js";
import type { Committer } from "../etcd/committer.js";
import { decodeBinding, encodeGeneration, encodeHolder, encodeOwner, type KeyLayout } from "../etcd/keys.js";
import type { Leases } from "../etcd/leases.js";
import { cmp, op } from "../etcd/ops.js";
import type { Reader, Snapshot, Watch } from "../etcd/reader.js";
import { Reads, reads } from "../etcd/reads.js";
import { eventually } from "../etcd/retry.js";
import { bindOps } from "./bindings.js";
import { claimLeaseSlot } from "./lease-cap.js";
import { acquisitionBytes, chargeLeaseBytes, giveBackLeaseBytes } from "../budgets/lease-bytes.js";
import type { PreemptionPace } from "../budgets/preemption-pace.js";
import { grantWithDelay, inLockDelay, lockDelaySeconds, lockDelayWrites } from "./lock-delay.js";
import { atTime } from "./long-timeout.js";
import { checkMaxHolders, semaphoreRules } from "./semaphore.js";
import { checkPreempt, preempt, type PreemptedHolding, type PreemptedLeases } from "./preemption.js";
import { lineRules, type Ahead, type LineRules } from "./shared.js";

export interface AcquireParams {
  resource: string;
  ttlMs: number | undefined;
  holder: string;
  wait: boolean;
  /** When to give up waiting (ms since the epoch); undefined: only the signal ends the wait. */
  waitUntil?: number;
  /** Acquire on this session instead of on a lease of its own. */
  sessionId?: bigint;
  /** With authentication on, the caller: the acquisition's lease is bound to it (or, on a session, the session must be). */
  principal?: string;
  /** If the acquisition's lease expires, nobody is granted the resource for this long (lock-delay.ts). */
  lockDelayMs?: number;
  /** Undefined: exclusive. */
  mode?: AcquireMode;
  /** Published with the acquisition (Describe, Observe) until Proclaim changes it; empty or undefined: none. */
  value?: Uint8Array;
  /** A counting semaphore's size (semaphore.ts; shared mode only); undefined: no cap. */
  maxHolders?: number;
  /** Take the resource from whoever holds it (preemption.ts); never waits. */
  preempt?: boolean;
}

export interface Grant {
  token: Token;
  /** The TTL etcd reports for the acquisition's own lease; undefined on a session. */
  ttlSeconds?: number;
  /** Whether it waited in line. */
  waited: boolean;
  /** The lock-delay granted, in whole seconds; undefined without one. */
  lockDelaySeconds?: number;
  /** With preempt: the holdings the grant ended (none when the resource was free). */
  preempted?: PreemptedHolding[];
}

export interface AcquireDeps {
  keys: KeyLayout;
  committer: Committer;
  reader: Reader;
  leases: Leases;
  limits: Limits;
  events: DomainEvents;
  /** The leases preempted (preemption.ts): renewals refuse them; a preemption here notes its own at once. */
  preempted?: PreemptedLeases;
  /** At most one preemption of a resource an interval (budgets/preemption-pace.ts). */
  preemptionPace?: PreemptionPace;
}

/** What a session acquisition's checks read (sessionReads). */
interface SessionFound {
  session: IRangeResponse;
  owner: IRangeResponse;
  shared: IRangeResponse;
  /** The session's places in the line, exclusive and shared (counts). */
  places: IRangeResponse[];
}

/** The TTL of a session waiter's place in line: how long it outlives a call that died with its server. */
const PLACE_TTL_SECONDS = 10;

export async function acquire(d: AcquireDeps, p: AcquireParams, signal: AbortSignal): Promise<Grant> {
  checkResource(p.resource);
  checkHolder(p.holder);
  if (p.value) checkValue(p.value, "value");
  const onSession = p.sessionId !== undefined && p.sessionId !== 0n;
  if (onSession) {
    checkLeaseId(p.sessionId!, "session_id");
    if (p.ttlMs !== undefined) throw new DomainError("invalid_argument", "ttl must be unset with session_id: an acquisition on a session lasts as long as the session");
  }
  if (p.preempt) checkPreempt(p, onSession);
  const ttl = onSession ? 0 : ttlSeconds(p.ttlMs, d.limits);
  const delay = lockDelaySeconds(p.lockDelayMs, d.limits, onSession, p.mode === "shared");
  const maxHolders = checkMaxHolders(p.maxHolders, p.mode === "shared");
  p = { ...p, maxHolders };
  // A session's owner never changes while it lives, so reading it once before acquiring on it is exact.
  if (onSession && p.principal !== undefined) await checkSessionOwner(d, p.sessionId!, p.principal);
  // A lease of its own that etcd no longer has when the grant is written expired between its grant and
  // the grant's transaction: the server, not the caller, was slower than the TTL. Nothing was granted on
  // it and the caller never saw it, so the acquisition starts over on a fresh lease (a few times, within
  // the call's deadline) rather than answering LEASE_NOT_FOUND for a lease the caller never named.
  for (let attempt = 1; ; attempt++) {
    try {
      return await acquireOnce(d, p, signal, onSession, ttl, delay);
    } catch (err) {
      if (onSession || !(err instanceof EtcdLeaseNotFound) || signal.aborted) throw err;
      if (attempt >= OWN_LEASE_TRIES)
        throw new DomainError("unavailable", `acquire: each of ${OWN_LEASE_TRIES} leases of ${ttl} s expired before its grant was written; the server or etcd is overloaded, retry later`);
    }
  }
}

/** Fresh leases an Acquire on a lease of its own tries before it gives up (see acquire()). */
const OWN_LEASE_TRIES = 3;

async function acquireOnce(d: AcquireDeps, p: AcquireParams, signal: AbortSignal, onSession: boolean, ttl: number, delay: number): Promise<Grant> {
  const lease = onSession ? { id: p.sessionId!, ttlSeconds: 0 } : delay > 0 ? await grantWithDelay(d.leases, ttl, delay) : await d.leases.grant(ttl);
  if (!onSession && p.principal !== undefined) {
    try {
      await claimLeaseSlot(d, p.principal, d.limits.maxLeasesPerCaller, lease.id);
    } catch (err) {
      void d.leases.revokeEventually(lease.id);
      throw err;
    }
  }
  // What it stores is charged to its lease (budgets/lease-bytes.ts): a session's acquisitions share the session's bytes.
  const bytes = acquisitionBytes(p.resource, p.holder, p.value, p.principal);
  try {
    await chargeLeaseBytes(d, lease.id, bytes, d.limits.maxBytesPerLease);
  } catch (err) {
    if (!onSession) void d.leases.revokeEventually(lease.id);
    throw err;
  }
  try {
    return await new Acquisition(d, p, lease, onSession, signal, delay).run();
  } catch (err) {
    if (onSession) void giveBackLeaseBytes(d, lease.id, bytes);
    throw err;
  }
}

class Acquisition {
  private readonly keys: KeyLayout;
  /** Distinguishes this attempt's keys from any other's, on the same lease or session too. */
  private readonly nonce = randomBytes(8).toString("hex");
  private readonly rules: LineRules;
  /** The key a grant creates (the owner key, or a shared holder's), and its value. */
  private readonly holderKey: Buffer;
  private readonly holderValue: Buffer;
  private readonly lineKey: Buffer;
  private readonly sessionKey?: Buffer;
  /** The lease of the place in line, once this acquisition waits. */
  private place?: { id: bigint; ttlSeconds: number };
  /** Set while a grant may have committed without this call knowing: cleanup must remove the owner key. */
  private maybeGranted = false;
  /**
   * A waiter's renewal of its own lease, sent beside the grant transaction that its turn starts: the
   * holder's TTL counts from its turn rather than from when it joined the line, at no further round
   * trip. It renews at most one transaction's time before the grant commits; a client counts its TTL
   * from the send of its Acquire, earlier still, and renews itself when the wait took long.
   */
  private renewal?: Promise<number>;

  constructor(
    private readonly d: AcquireDeps,
    private readonly p: AcquireParams,
    private readonly lease: { id: bigint; ttlSeconds: number },
    private readonly onSession: boolean,
    private readonly signal: AbortSignal,
    /** The lock-delay this acquisition sets, in seconds (0: none). */
    private readonly delay: number,
  ) {
    this.keys = d.keys;
    // A semaphore (semaphore.ts) is a shared acquisition with a cap: rules of its own.
    this.rules =
      p.maxHolders !== undefined ? semaphoreRules(d.keys, p.resource, lease.id, p.maxHolders) : lineRules(d.keys, p.resource, p.mode ?? "exclusive", lease.id);
    this.holderKey = this.rules.holderKey;
    this.lineKey = Buffer.concat([this.rules.lineKey(lease.id), Buffer.from(this.nonce)]);
    this.holderValue = encodeOwner({ holder: p.holder, nonce: this.nonce, principal: p.principal, maxHolders: p.maxHolders, value: p.value });
    if (onSession) this.sessionKey = d.keys.sessionKey(lease.id);
  }

  async run(): Promise<Grant> {
    try {
      let preempted: PreemptedHolding[] | undefined;
      let generation: bigint | undefined;
      if (this.p.preempt) {
        this.maybeGranted = true;
        const bind = this.p.principal !== undefined ? bindOps(this.keys, this.lease.id, this.p.principal) : [];
        ({ generation, preempted } = await preempt(this.d, this.p, this.lease.id, this.grantWrites(), bind));
      } else {
        generation = await this.tryFirst();
      }
      let waited = false;
      if (generation === undefined) {
        generation = await inLine(this.d.events, this.p.resource, () => this.waitInLine());
        waited = true;
      }
      // A caller that gave up while its grant committed never gets the answer (its call is gone): nobody
      // would release the grant, and it would stand until its lease's TTL (forever on a session). The
      // catch below gives it back. A cancel that arrives after the answer left is the client's to handle.
      this.maybeGranted = true;
      if (this.signal.aborted) throw cancelled(this.p.resource);
      const token: Token = { resource: this.p.resource, generation, leaseId: this.lease.id, ...(this.rules.mode === "shared" ? { mode: "shared" as const } : {}) };
      if (this.onSession) {
        if (this.place) this.d.leases.revokeEventually(this.place.id);
        return { token, waited };
      }
      // After a wait, the holder's TTL starts now rather than when it joined the line; without one, the
      // TTL etcd reported at the grant is fresh.
      const ttlLeft = waited ? await (this.renewal ?? this.d.leases.renew(this.lease.id)) : this.lease.ttlSeconds;
      if (ttlLeft <= 0) throw placeLost(this.p.resource, this.lease.id);
      if (this.signal.aborted) throw cancelled(this.p.resource);
      return { token, ttlSeconds: ttlLeft, waited, ...(this.delay > 0 ? { lockDelaySeconds: this.delay } : {}), ...(preempted ? { preempted } : {}) };
    } catch (err) {
      await this.leaveNothing();
      throw err;
    }
  }

  /**
   * A waiter that gives up, or a grant that failed on its way, leaves no key behind. The first attempt
   * is awaited (the call answers once its keys are gone); if etcd cannot be reached, the rest goes on
   * in the background once it is back.
   */
  private async leaveNothing(): Promise<void> {
    const { leases } = this.d;
    const steps: Promise<void>[] = [];
    // Revoking a lease deletes its keys: the acquisition's own (its place, and a grant that may have
    // committed), or a session waiter's place.
    if (!this.onSession) steps.push(leases.revokeEventually(this.lease.id));
    if (this.place) steps.push(leases.revokeEventually(this.place.id));
    if (this.onSession && this.maybeGranted) {
      // On a session, only the holder key is this attempt's: its value carries the nonce.
      const compare = [cmp.valueIs(this.holderKey, this.holderValue)];
      steps.push(eventually(() => this.d.committer.commit("release", { compare, success: [op.del(this.holderKey)], failure: [] })));
    }
    await Promise.all(steps);
  }

  /** A grant's writes, under the rules' further condition if they have one (LineRules.grantIf). */
  private grant(writes: IRequestOp[]): IRequestOp[] {
    return this.rules.grantIf ? this.rules.grantIf(writes) : writes;
  }

  private granted(responses: IResponseOp[]): boolean {
    return this.rules.granted ? this.rules.granted(responses) : true;
  }

  /** The writes of a grant: the holder key, the generation marked issued, a fence if there is none, its lock-delay key if any. */
  private grantWrites() {
    const fenceKey = this.keys.fenceKey(this.p.resource);
    return [
      op.put(this.holderKey, this.holderValue, this.lease.id),
      op.put(this.keys.issuedKey(this.p.resource), Buffer.alloc(0)),
      op.txn({ compare: [cmp.createdAt(fenceKey, 0n)], success: [op.put(fenceKey, encodeGeneration(0n))], failure: [] }),
      ...lockDelayWrites(this.keys, this.p.resource, this.lease.id, this.delay),
    ];
  }

  /**
   * Takes the resource if nobody it must wait for holds or waits: the generation. Otherwise fails, or,
   * with wait, joins the line (in the same transaction when the place can go on the acquisition's own
   * lease).
   */
  private async tryFirst(): Promise<bigint | undefined> {
    const { p, rules } = this;
    // On a session, the grant must also find the session holding and waiting for nothing of the resource:
    // a shared grant does not otherwise look at shared holders or shared waiters.
    const sessionChecks = this.sessionKey ? [cmp.exists(this.sessionKey), ...this.sessionFree()] : [];
    const joinNow = p.wait && !this.onSession;
    const look = reads({ ahead: rules.aheadReads(), session: this.sessionReads() });
    // A lease of its own is bound to the caller by the first transaction that puts a key on it.
    const bind = p.principal !== undefined && !this.onSession ? bindOps(this.keys, this.lease.id, p.principal) : [];
    // A semaphore's later permits are granted on a look that found room; without wait, each failed try
    // is another holder granted first, so the tries end once the semaphore is full.
    let seenAt: bigint | undefined;
    for (let attempt = 1; ; attempt++) {
      this.maybeGranted = true;
      const res = await this.d.committer.commit("acquire", {
        compare: [...rules.free(seenAt), ...sessionChecks],
        success: [...this.grant(this.grantWrites()), ...bind],
        failure: joinNow ? [...look.ops(), op.put(this.lineKey, encodeHolder(p), this.lease.id), ...bind] : look.ops(),
      });
      if (res.succeeded && this.granted(res.responses)) return res.revision;
      this.maybeGranted = false;

      // The grant's further condition failed (grantIf): read what stands in the way.
      const found = res.succeeded ? (await this.d.reader.snapshot("acquire", look)).found : look.decodeTxn(res.responses);
      const { ahead, session } = found;
      if (session) this.checkSession(session);
      if (ahead.mismatch) throw ahead.mismatch;
      if (res.succeeded) {
        // Gone by the time it was read (the only way: the holders changed between the two): try again.
        if (attempt < 10) continue;
        throw new DomainError("aborted", `"${p.resource}" changed hands too often to be acquired; acquire again`, "RESOURCE_HELD", { resource: p.resource });
      }
      if (!joinNow && ahead.room) {
        seenAt = res.revision;
        continue;
      }
      return this.notGranted(res.revision, ahead);
    }
  }

  /** After a first try that was not granted: the refusal without wait, or the place in line just joined. */
  private async notGranted(revision: bigint, ahead: Ahead): Promise<undefined> {
    const { p } = this;
    const joinNow = p.wait && !this.onSession;
    if (!p.wait) {
      // Nobody holds it, and a lock-delay runs: the refusal says until when.
      throw ahead.lockDelay && !ahead.owner ? await inLockDelay(this.d.leases, p.resource, ahead.lockDelay) : ahead.refusal();
    }
    if (joinNow) this.joined = { revision, ahead: ahead.key, aheadEnd: ahead.keyEnd };
    return undefined;
  }

  /** Where this acquisition waits: its key's create revision, and the key (or range) it watches, if any. */
  private joined?: { revision: bigint; ahead?: Buffer; aheadEnd?: Buffer };

  /** Waits for its turn and takes the resource: the generation. */
  private async waitInLine(): Promise<bigint> {
    if (!this.joined) await this.joinOnSession();
    const { revision: myRev, ahead, aheadEnd } = this.joined!;
    // One renewal rhythm for the whole wait, however many holders go ahead of it: a rhythm restarted at
    // each handover would put off the next renewal by up to a third of the TTL each time.
    const place = this.keepPlace();
    try {
      return await this.takeTurn(myRev, ahead, aheadEnd, myRev, place.lost);
    } finally {
      place.stop();
    }
  }

  private async takeTurn(myRev: bigint, ahead: Buffer | undefined, aheadEnd: Buffer | undefined, seenAt: bigint, lost: AbortSignal): Promise<bigint> {
    for (;;) {
      if (ahead) await this.waitForDeletion(ahead, aheadEnd, seenAt, lost);
      const look = reads({
        ahead: this.rules.aheadReads(myRev),
        mine: { key: this.lineKey },
        session: Reads.maybe(this.sessionKey && { key: this.sessionKey }),
      });
      let seen: Snapshot<ReturnType<typeof look.decode>>;
      if (this.rules.grantable(ahead)) {
        this.maybeGranted = true;
        if (!this.onSession) {
          this.renewal = this.d.leases.renew(this.lease.id);
          // Awaited by run() once granted; a grant that fails leaves it unread.
          this.renewal.catch(() => undefined);
        }
        const res = await this.d.committer.commit("acquire", {
          compare: [cmp.createdAt(this.lineKey, myRev), ...this.rules.firstInLine(myRev, seenAt), ...(this.sessionKey ? [cmp.exists(this.sessionKey)] : [])],
          success: this.grant([op.del(this.lineKey), ...this.grantWrites()]),
          failure: look.ops(),
        });
        if (res.succeeded && this.granted(res.responses)) return res.revision;
        this.maybeGranted = false;
        seen = res.succeeded ? await this.d.reader.snapshot("acquire", look) : { revision: res.revision, found: look.decodeTxn(res.responses) };
      } else {
        seen = await this.d.reader.snapshot("acquire", look);
      }
      const { mine, session } = seen.found;
      if (this.sessionKey && !session?.kvs[0]) throw sessionGone(this.lease.id);
      if (!mine.kvs[0]) throw placeLost(this.p.resource, this.place?.id ?? this.lease.id);
      if (seen.found.ahead.mismatch) throw seen.found.ahead.mismatch;
      ahead = seen.found.ahead.key;
      aheadEnd = seen.found.ahead.keyEnd;
      seenAt = seen.revision;
    }
  }

  /** A session waiter joins the line on a place lease of its own. */
  private async joinOnSession(): Promise<void> {
    this.place = await this.d.leases.grant(PLACE_TTL_SECONDS);
    const ahead = this.rules.aheadReads();
    const session = this.sessionReads();
    const res = await this.d.committer.commit("acquire", {
      compare: [cmp.exists(this.sessionKey!), ...this.sessionFree()],
      success: [...ahead.ops(), op.put(this.lineKey, encodeHolder(this.p), this.place.id)],
      failure: session.ops(),
    });
    if (!res.succeeded) {
      const found = session.decodeTxn(res.responses);
      if (found) this.checkSession(found);
      throw new Error(`joining the line of "${this.p.resource}" failed without a cause`);
    }
    const found = ahead.decodeTxn(res.responses);
    if (found.mismatch) throw found.mismatch;
    this.joined = { revision: res.revision, ahead: found.key, aheadEnd: found.keyEnd };
  }

  /** What checkSession() judges, read in the transaction that found the resource taken; nothing off a session. */
  private sessionReads(): Reads<SessionFound | undefined> {
    if (!this.sessionKey) return Reads.nothing();
    return reads({
      session: { key: this.sessionKey },
      owner: { key: this.keys.ownerKey(this.p.resource) },
      shared: { key: this.sharedHolding() },
      places: this.keys.linePlacesOf(this.p.resource, this.lease.id).map(([key, range_end]) => ({ key, range_end, count_only: true })),
    });
  }

  /** Refuses an acquisition on a session that is gone, or that holds or waits for the resource already, in either mode. */
  private checkSession({ session, owner, shared, places }: SessionFound): void {
    const id = this.lease.id;
    if (!session.kvs[0]) throw sessionGone(id);
    const holding = owner.kvs[0] && BigInt(owner.kvs[0].lease) === id ? owner.kvs[0] : shared.kvs[0];
    if (holding || places.some((r) => Number(r.count) > 0)) {
      throw new DomainError(
        "already_exists",
        `session ${id} already ${holding ? "holds" : "waits for"} "${this.p.resource}"; release that acquisition first, or use another session`,
        "ALREADY_ACQUIRED",
        { resource: this.p.resource, session_id: String(id), ...(holding ? { generation: String(holding.create_revision) } : {}) },
      );
    }
  }

  /** The session neither holds the resource shared nor waits for it (checkSession() judges the exclusive holding). */
  private sessionFree() {
    return [cmp.createdAt(this.sharedHolding(), 0n), ...this.keys.linePlacesOf(this.p.resource, this.lease.id).map(([key, end]) => cmp.rangeEmpty(key, end))];
  }

  /** The key of a shared holding of the resource on this acquisition's session (keys are named by lease). */
  private sharedHolding(): Buffer {
    return this.keys.sharedKey(this.p.resource, this.lease.id);
  }

  /**
   * Renews the lease of this acquisition's place in line every third of its TTL, from the moment it
   * starts waiting until stop(): the open Acquire call is the client asking to keep its place. `lost`
   * aborts if a renewal finds the place gone or fails.
   */
  private keepPlace(): { lost: AbortSignal; stop: () => void } {
    const place = this.place ?? this.lease;
    const lost = new AbortController();
    const timer = setInterval(() => {
      this.d.leases.renew(place.id).then(
        (ttl) => ttl <= 0 && lost.abort(placeLost(this.p.resource, place.id)),
        (err) => lost.abort(err),
      );
    }, Math.max(500, (place.ttlSeconds * 1000) / 3));
    return { lost: lost.signal, stop: () => clearInterval(timer) };
  }

  /**
   * Waits until key, or a key of [key, end), is deleted (after revision seenAt). The place being lost (`lost`, keepPlace), the call
   * being cancelled, or its wait deadline end the wait; on a session, so does the session's end.
   */
  private async waitForDeletion(key: Buffer, end: Buffer | undefined, seenAt: bigint, lost: AbortSignal): Promise<void> {
    const { reader } = this.d;
    const { resource, waitUntil } = this.p;
    const stop = new AbortController();
    const onAbort = () => stop.abort(cancelled(resource));
    const onLost = () => stop.abort(lost.reason);
    if (this.signal.aborted) throw cancelled(resource);
    if (lost.aborted) throw lost.reason;
    this.signal.addEventListener("abort", onAbort, { once: true });
    lost.addEventListener("abort", onLost, { once: true });
    const cancelTimer = waitUntil !== undefined ? atTime(waitUntil, () => stop.abort(waitExpired(resource))) : () => undefined;
    const watches: Watch[] = [];
    try {
      const deleted = (w: { key: Buffer; rangeEnd?: Buffer }, onDelete: () => void) =>
        reader.watch("watch", { ...w, fromRevision: seenAt + 1n }, stop.signal).then((watch) => {
          watches.push(watch);
          void (async () => {
            try {
              for await (const res of watch) if (res.events.some((e) => e.type === "Delete")) return onDelete();
            } catch (err) {
              stop.abort(err);
            }
          })();
        });
      const done = new Promise<void>((resolve, reject) => {
        if (stop.signal.aborted) return reject(stop.signal.reason);
        stop.signal.addEventListener("abort", () => reject(stop.signal.reason), { once: true });
        void deleted({ key, ...(end ? { rangeEnd: end } : {}) }, resolve).catch(reject);
        if (this.sessionKey) void deleted({ key: this.sessionKey }, () => stop.abort(sessionGone(this.lease.id))).catch(reject);
      });
      await done;
    } finally {
      cancelTimer();
      this.signal.removeEventListener("abort", onAbort);
      lost.removeEventListener("abort", onLost);
      stop.abort();
      await Promise.all(watches.map((w) => w.close()));
    }
  }
}

/** Refuses an acquisition on a session that another principal opened. */
async function checkSessionOwner(d: AcquireDeps, sessionId: bigint, principal: string): Promise<void> {
  const found = await d.reader.range("acquire", { key: d.keys.bindingKey(sessionId) });
  const owner = decodeBinding(found.kvs[0]);
  if (owner === undefined) throw sessionGone(sessionId);
  if (owner !== principal) throw notHolder(`session ${sessionId}`, principal, { lease_id: String(sessionId) });
}

const placeLost = (resource: string, leaseId: bigint) =>
  new DomainError("aborted", `the place in line for "${resource}" was lost (lease ${leaseId} expired); acquire again`);
const cancelled = (resource: string) => new DomainError("cancelled", `acquire of "${resource}" was cancelled; the waiter's place was removed`);
const waitExpired = (resource: string) =>
  new DomainError("deadline_exceeded", `gave up waiting for "${resource}" at its deadline; the waiter's place was removed`);
const sessionGone = (id: bigint) => {
  const e = leaseNotFound(id);
  return new DomainError("not_found", `session ${id} is not open: it expired, was closed, or never existed; open a new session`, e.reason, e.metadata);
};
