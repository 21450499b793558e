// etcd leases: grant, renew, revoke, time to live. A renewal is sent only when a caller asks for it:
// nothing here keeps a lease alive on its own.
//
// Renewals share one LeaseKeepAlive stream to etcd. etcd answers the requests of a stream one by one in
// the order they came, so the renewals waiting for an answer form one queue and each answer belongs to
// the oldest. A renewal that waits longer than the timeout is answered UNAVAILABLE but keeps its place,
// so that its late answer, when it comes, is not taken for a newer renewal's (that would count a lease's
// time from a send that did not renew it). Only a stream that answers nothing for several timeouts,
// or that fails, is given up: its renewals are answered UNAVAILABLE and the next renewal opens a new one.
// One timer watches the whole queue, whatever its length.
//
// Fairness: at most SENT_WINDOW renewals are on the stream at once; the others wait in a queue per
// owner (the caller that asked: a principal or a client address), served in turn, one each. A caller
// that floods renewals fills only its own queue, and another caller's renewal goes out within one turn.
// A renewal of a lease already waiting, unsent, in the queue joins it: etcd is asked once, after both
// asked, which is what each of them counts its TTL from.
//
// An acquisition with a lock-delay has a delay lease beside its own (keys.ts, delayLeaseOf): renewing
// or revoking the acquisition's lease renews or revokes its delay lease too, whoever asks, on any
// replica, so that the delay lease outlives the acquisition's by the delay when, and only when, the
// acquisition's expires.
import type { Etcd3, IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from "etcd3";
import { DomainError, unavailable } from "../domain/errors.js";
import type { EtcdCalls } from "./calls.js";
import { EtcdLeaseNotFound } from "./errors.js";
import { delayLeaseOf } from "./keys.js";
import { eventually } from "./retry.js";

type KeepAliveStream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

interface Caller {
  resolve(ttl: number): void;
  reject(err: Error): void;
}

/** A renewal asked for: queued, then sent, then answered. */
interface Renewal {
  readonly id: string;
  readonly owner: string;
  /** When the first of its callers asked. */
  readonly askedAt: number;
  sentAt: number;
  /** Set once the callers have their answer (a TTL, or UNAVAILABLE after the timeout). */
  answered: boolean;
  callers: Caller[];
}

/** A stream whose oldest unanswered renewal is this many timeouts old is given up. */
const DEAD_AFTER_TIMEOUTS = 3;
/** Most renewals sent to etcd and not answered yet; the rest wait their owner's turn. */
const SENT_WINDOW = 256;

export class Leases {
  private stream?: Promise<KeepAliveStream>;
  /** The open stream whose answers the queue waits for. */
  private current?: KeepAliveStream;
  /** Sent renewals in the order sent, from head on; the ones before head are answered. */
  private waiting: Renewal[] = [];
  private head = 0;
  /** Renewals not sent yet, per owner; the owners in turn order (the next to send first). */
  private readonly queues = new Map<string, Renewal[]>();
  /** The unsent renewal of each lease id, which a new request for the same lease joins. */
  private readonly queuedById = new Map<string, Renewal>();
  private queued = 0;
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly etcd: Etcd3,
    private readonly calls: EtcdCalls,
    private readonly renewTimeoutMs: number,
  ) {}

  /** Grants a lease; with id, that one (etcd refuses an id in use: FAILED_PRECONDITION). */
  async grant(ttlSeconds: number, id?: bigint): Promise<{ id: bigint; ttlSeconds: number }> {
    const res = await this.calls.run("lease grant", () => this.etcd.leaseClient.leaseGrant({ TTL: ttlSeconds, ...(id !== undefined ? { ID: id.toString() } : {}) }));
    return { id: BigInt(res.ID), ttlSeconds: Number(res.TTL) };
  }

  /** Revokes a lease and with it every key attached (and its delay lease, if any). False if it was already gone. */
  async revoke(id: bigint): Promise<boolean> {
    const delayLease = delayLeaseOf(id);
    if (delayLease === undefined) return this.revokeOne(id);
    const [revoked] = await Promise.all([this.revokeOne(id), this.revokeOne(delayLease)]);
    return revoked;
  }

  private async revokeOne(id: bigint): Promise<boolean> {
    try {
      await this.calls.run("lease revoke", () => this.etcd.leaseClient.leaseRevoke({ ID: id.toString() }));
      return true;
    } catch (err) {
      if (err instanceof EtcdLeaseNotFound) return false;
      throw err;
    }
  }

  /**
   * Revokes a lease that nobody uses any more, retrying while etcd cannot be reached, until it is gone:
   * a place in line left by a call that failed while etcd was away is removed as soon as etcd is back,
   * and does not block the line for a whole TTL (which etcd restarts when it comes back). Resolves once
   * the first attempt has settled.
   */
  revokeEventually(id: bigint): Promise<void> {
    return eventually(() => this.revoke(id));
  }

  /** Seconds left on the lease as etcd reports them; 0 or less when it is gone. */
  async timeToLive(id: bigint): Promise<number> {
    const res = await this.calls.run("lease time-to-live", () => this.etcd.leaseClient.leaseTimeToLive({ ID: id.toString() }));
    return Number(res.TTL);
  }

  /** The keys attached to the lease (none when it is gone). */
  async keysOf(id: bigint): Promise<Buffer[]> {
    const res = await this.calls.run("lease keys", () => this.etcd.leaseClient.leaseTimeToLive({ ID: id.toString(), keys: true }));
    return Number(res.TTL) > 0 ? res.keys.map((k) => Buffer.from(k)) : [];
  }

  /**
   * Renews a lease once, after this call. Resolves with the TTL etcd reports after the renewal, or 0 if
   * the lease is gone. Rejects with UNAVAILABLE if etcd does not answer within the renewal timeout.
   * owner: who asks, for fairness between callers ("" for the server's own renewals).
   * A delayed acquisition's delay lease is renewed after it, and only if it was still alive: a late
   * renewal of an expired lease must not prolong the delay that its expiry started. UNAVAILABLE if
   * either renewal is. A delay lease that is gone already (its renewals failed while the acquisition's
   * went through) is no reason to fail the acquisition's: the holder keeps its lease, without a delay.
   */
  async renew(id: bigint, owner = ""): Promise<number> {
    const ttl = await this.renewOne(id, owner);
    const delayLease = delayLeaseOf(id);
    if (delayLease !== undefined && ttl > 0) await this.renewOne(delayLease, owner);
    return ttl;
  }

  private async renewOne(id: bigint, owner: string): Promise<number> {
    const stream = await this.keepAliveStream();
    // The stream failed while this renewal waited for it to open: nothing would answer on it.
    if (stream !== this.current) throw unavailable("lease renew", new Error("the keepalive stream to etcd failed"));
    return new Promise<number>((resolve, reject) => {
      const key = id.toString();
      const same = this.queuedById.get(key);
      if (same) {
        same.callers.push({ resolve, reject });
        return;
      }
      const r: Renewal = { id: key, owner, askedAt: performance.now(), sentAt: 0, answered: false, callers: [{ resolve, reject }] };
      const queue = this.queues.get(owner);
      if (queue) queue.push(r);
      else this.queues.set(owner, [r]);
      this.queuedById.set(key, r);
      this.queued++;
      this.sweeper ??= setInterval(() => this.sweep(), Math.max(50, this.renewTimeoutMs / 4));
      this.pump();
    });
  }

  /** Sends queued renewals while the window has room, one per owner in turn. */
  private pump(): void {
    const stream = this.current;
    if (!stream) return;
    while (this.pending < SENT_WINDOW && this.queued > 0) {
      const [owner, queue] = this.queues.entries().next().value!;
      const r = queue.shift()!;
      this.queues.delete(owner);
      if (queue.length > 0) this.queues.set(owner, queue); // to the back of the turn order
      this.queued--;
      this.queuedById.delete(r.id);
      if (r.answered) continue; // given up while it waited
      r.sentAt = performance.now();
      this.waiting.push(r);
      stream.write({ ID: r.id });
    }
  }

  /** How many renewals are sent and wait for etcd's answer. */
  private get pending(): number {
    return this.waiting.length - this.head;
  }

  close(): void {
    this.failAll(unavailable("lease keepalive", new Error("closing")));
  }

  private keepAliveStream(): Promise<KeepAliveStream> {
    if (!this.stream) {
      const opening = this.calls.run("lease keepalive", () => this.etcd.leaseClient.leaseKeepAlive());
      this.stream = opening.then((s) => {
        this.current = s;
        s.on("data", (res) => this.answer(s, res));
        s.on("error", (err) => {
          if (this.stream === opening) this.failAll(unavailable("lease keepalive", err));
        });
        s.on("end", () => {
          if (this.stream === opening) this.failAll(unavailable("lease keepalive", new Error("stream ended")));
        });
        return s;
      });
      this.stream.catch(() => {
        if (this.stream === opening) this.stream = undefined;
      });
    }
    return this.stream;
  }

  private answer(from: KeepAliveStream, res: ILeaseKeepAliveResponse): void {
    if (from !== this.current) return;
    const r = this.waiting[this.head];
    if (!r) return;
    if (r.id !== res.ID) {
      // Not the order etcd keeps: no answer on this stream can be trusted any more.
      this.failAll(unavailable("lease keepalive", new Error(`answer for lease ${res.ID} where ${r.id} was due`)));
      from.cancel();
      return;
    }
    this.waiting[this.head++] = undefined as never;
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    const seconds = (performance.now() - r.askedAt) / 1000;
    this.calls.observe("lease renew", seconds);
    if (!r.answered) {
      r.answered = true;
      for (const c of r.callers) c.resolve(Number(res.TTL));
    }
    this.pump();
    if (this.pending === 0 && this.queued === 0) this.stopSweeping();
  }

  /** Answers UNAVAILABLE to renewals past the timeout; gives the stream up when it has gone silent. */
  private sweep(): void {
    const now = performance.now();
    const oldest = this.waiting[this.head];
    if (!oldest && this.queued === 0) return this.stopSweeping();
    if (oldest && now - oldest.sentAt > DEAD_AFTER_TIMEOUTS * this.renewTimeoutMs) {
      this.failAll(unavailable("lease keepalive", new Error(`no answer within ${DEAD_AFTER_TIMEOUTS * this.renewTimeoutMs} ms`)));
      return;
    }
    const late = unavailable("lease renew", new Error(`no answer within ${this.renewTimeoutMs} ms`));
    const giveUp = (r: Renewal) => {
      r.answered = true;
      this.calls.observe("lease renew", (now - r.askedAt) / 1000, late);
      for (const c of r.callers) c.reject(late);
    };
    // Sent in turn order, not in the order asked: all of them are looked at (the window is small).
    for (let i = this.head; i < this.waiting.length; i++) {
      const r = this.waiting[i];
      if (!r.answered && now - r.askedAt > this.renewTimeoutMs) giveUp(r);
    }
    // Unsent ones that waited their turn too long are answered too, and skipped when their turn comes.
    for (const queue of this.queues.values()) {
      for (const r of queue) {
        if (now - r.askedAt <= this.renewTimeoutMs) break;
        if (!r.answered) {
          giveUp(r);
          this.queuedById.delete(r.id);
        }
      }
    }
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private failAll(err: DomainError): void {
    const stream = this.stream;
    this.stream = undefined;
    this.current = undefined;
    stream?.then((s) => s.cancel(), () => undefined);
    const waiting = [...this.waiting.slice(this.head), ...[...this.queues.values()].flat()];
    this.waiting = [];
    this.head = 0;
    this.queues.clear();
    this.queuedById.clear();
    this.queued = 0;
    this.stopSweeping();
    for (const r of waiting) {
      if (r.answered) continue;
      r.answered = true;
      for (const c of r.callers) c.reject(err);
    }
  }
}
