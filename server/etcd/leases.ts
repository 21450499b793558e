// etcd leases: grant, renew, revoke, time to live. A renewal is sent only when a caller asks for it:
// nothing here keeps a lease alive on its own.
//
// Renewals share one LeaseKeepAlive stream to etcd. etcd answers the requests of a stream one by one in
// the order they came, so the renewals waiting for an answer form one queue and each answer belongs to
// the oldest. A renewal that waits longer than the timeout is answered UNAVAILABLE but keeps its place,
// so that its late answer, when it comes, is not taken for a newer renewal's (that would count a lease's
// time from a send that did not renew it).
//
// A stream that stops working is replaced at once, not after its renewals time out: when it fails or
// ends (etcd killed, the connection dropped), or when its oldest renewal has had no answer for a short
// while (STALL_MS; etcd answers a renewal in milliseconds). Its unanswered renewals are sent again, first,
// on the new stream, and answered from there; a renewal sent again renews no earlier than its caller
// asked, which is what the caller counts its TTL from. Only a stream that fails before its first answer
// (etcd refusing connections: it is away) answers its renewals UNAVAILABLE at once, so that a caller is
// told while etcd is away, and the next renewal opens a new stream, which works as soon as etcd is back.
// One timer watches every renewal, whatever their number.
//
// Fairness: at most SENT_WINDOW renewals are on the stream at once, and at most OWNER_WINDOW of one
// owner's (the caller that asked: a principal or a client address); the others wait in a queue per
// owner, served in turn, one each. A caller that floods renewals fills only its own queue, and another
// caller's renewal goes out within one turn, with no more than OWNER_WINDOW of each other caller's ahead
// of it in etcd's (which answers them one by one).
// A renewal of a lease already waiting, unsent, in the queue joins it: etcd is asked once, after both
// asked, which is what each of them counts its TTL from. (A renewal already sent is not joined: it was
// sent before the later caller asked, and would renew less than that caller counts on.) Of each lease,
// one renewal at most is on the stream: the next waits, joinable, until etcd has answered the one sent,
// so that a caller naming one lease thousands of times a second puts one renewal at a time ahead of the
// others' (etcd answers a stream's requests one by one, each a round trip to its leader from a follower:
// 256 renewals of one flooded lease ahead of a bystander's took longer than its 2 s TTL). What a flood
// costs is its sender's: its renewals that wait past the timeout are answered UNAVAILABLE and leave its
// queue, and no amount of waiting renewals slows the sending of the others (the queues are taken from
// the front without copying), so the stream never goes silent for everyone because of one caller.
//
// An acquisition with a lock-delay has a delay lease beside its own (keys.ts, delayLeaseOf): renewing
// or revoking the acquisition's lease renews or revokes its delay lease too, whoever asks, on any
// replica, so that the delay lease outlives the acquisition's by the delay when, and only when, the
// acquisition's expires.
import type { Etcd3, IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from "etcd3";
import { DomainError, unavailable } from "../errors/errors.js";
import type { EtcdCalls } from "./calls.js";
import { EtcdLeaseNotFound } from "./classify.js";
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

/** One keepalive stream and the renewals sent on it. */
interface Link {
  readonly stream: KeepAliveStream;
  /** Sent renewals in the order sent, from head on; the ones before head are answered. */
  waiting: Renewal[];
  head: number;
  /** Whether etcd answered anything on it. */
  answered: boolean;
}

/**
 * Renewals in the order asked, taken from the front. Not an array's shift(): on an array of a flood's
 * size that copies the array, once for every renewal sent.
 */
class Fifo {
  private items: Renewal[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(r: Renewal): void {
    this.items.push(r);
  }

  /** The oldest, without taking it. */
  peek(): Renewal | undefined {
    return this.items[this.head];
  }

  shift(): Renewal | undefined {
    if (this.head === this.items.length) return undefined;
    const r = this.items[this.head];
    this.items[this.head++] = undefined as never;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return r;
  }

  all(): Renewal[] {
    return this.items.slice(this.head);
  }
}

/** Most renewals sent to etcd and not answered yet; the rest wait their owner's turn. */
const SENT_WINDOW = 256;
/**
 * Most renewals of one owner on the stream at once. etcd answers a stream's requests one by one: past
 * enough of them to keep it busy, more add nothing to that owner's rate, only to the wait of every
 * renewal sent after them. Measured on one etcd (test/integration/renewal-flood.test.ts's flood): 64
 * carried about as many renewals a second as the whole window of 256 (75,000 in 8 s against 72,000), 32
 * about 40% fewer.
 */
export const OWNER_WINDOW = 64;
/**
 * A stream whose oldest renewal has had no answer for this long is replaced (its renewals sent again on
 * a new one). etcd answers a renewal without writing to disk; capped by half the renewal timeout, so
 * that a renewal sent again still has time for its answer.
 */
const STALL_MS = 1000;

export class Leases {
  /** The open stream, if any; renewals are sent on it. */
  private link?: Link;
  private opening = false;
  private closed = false;
  /** Renewals taken from a stream that stopped working, to send first on the next one. */
  private resend: Renewal[] = [];
  /** Renewals not sent yet, per owner; the owners in turn order (the next to send first). */
  private readonly queues = new Map<string, Fifo>();
  /** The queues of owners with OWNER_WINDOW renewals on the stream: back in turn once one is answered. */
  private readonly parked = new Map<string, Fifo>();
  /** Renewals on the stream, per owner. */
  private readonly onStream = new Map<string, number>();
  /** The unsent renewal of each lease id, which a new request for the same lease joins. */
  private readonly queuedById = new Map<string, Renewal>();
  /** The renewal of each lease id sent and not answered by etcd yet (or taken to be sent again). */
  private readonly sentById = new Map<string, Renewal>();
  /** Renewals whose turn came while one of the same lease was on the stream: sent once it is answered. */
  private readonly held = new Map<string, Renewal>();
  /** Held renewals whose lease's renewal was answered: sent first, after the ones to send again. */
  private ready: Renewal[] = [];
  private queued = 0;
  private sweeper?: NodeJS.Timeout;
  private lastSweep?: number;
  private readonly stallMs: number;
  private readonly sweepEveryMs: number;

  constructor(
    private readonly etcd: Etcd3,
    private readonly calls: EtcdCalls,
    private readonly renewTimeoutMs: number,
  ) {
    this.stallMs = Math.min(STALL_MS, renewTimeoutMs / 2);
    this.sweepEveryMs = Math.max(25, this.stallMs / 4);
  }
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
  renew(id: bigint, owner = ""): Promise<number> {
    const delayLease = delayLeaseOf(id);
    // Without a delay lease, the renewal's own promise: no frame around it (KeepAlive's thousands a second).
    if (delayLease === undefined) return this.renewOne(id, owner);
    return this.renewOne(id, owner).then(async (ttl) => {
      if (ttl > 0) await this.renewOne(delayLease, owner);
      return ttl;
    });
  }

  private renewOne(id: bigint, owner: string): Promise<number> {
    if (this.closed) return Promise.reject(unavailable("lease renew", new Error("closing")));
    return new Promise<number>((resolve, reject) => {
      const key = id.toString();
      const same = this.queuedById.get(key);
      if (same) {
        same.callers.push({ resolve, reject });
        return;
      }
      const r: Renewal = { id: key, owner, askedAt: performance.now(), sentAt: 0, answered: false, callers: [{ resolve, reject }] };
      const queue = this.queues.get(owner) ?? this.parked.get(owner);
      if (queue) queue.push(r);
      else {
        const fresh = new Fifo();
        fresh.push(r);
        (this.full(owner) ? this.parked : this.queues).set(owner, fresh);
      }
      this.queuedById.set(key, r);
      this.queued++;
      if (!this.sweeper) {
        this.lastSweep = undefined;
        this.sweeper = setInterval(() => this.sweep(), this.sweepEveryMs);
      }
      this.open();
      this.pump();
    });
  }

  /**
   * Sends renewals while the window has room: the ones to send again first, then the held ones now free,
   * then one per owner in turn. A renewal whose lease has one on the stream is held until that is answered.
   */
  private pump(): void {
    const link = this.link;
    if (!link) return;
    while (link.waiting.length - link.head < SENT_WINDOW && (this.resend.length > 0 || this.ready.length > 0 || this.queues.size > 0)) {
      let r: Renewal;
      if (this.resend.length > 0) r = this.resend.shift()!;
      else if (this.ready.length > 0) r = this.ready.shift()!;
      else {
        const [owner, queue] = this.queues.entries().next().value!;
        if (this.full(owner)) {
          this.queues.delete(owner);
          this.parked.set(owner, queue);
          continue;
        }
        r = queue.shift()!;
        this.queues.delete(owner);
        if (queue.length > 0) this.queues.set(owner, queue); // to the back of the turn order
        this.queued--;
        if (r.answered) {
          if (this.queuedById.get(r.id) === r) this.queuedById.delete(r.id);
          continue;
        }
        const sent = this.sentById.get(r.id);
        if (sent && sent !== r) {
          // Joinable still (it stays in queuedById): later requests for the lease join it while it waits.
          this.held.set(r.id, r);
          continue;
        }
        if (this.queuedById.get(r.id) === r) this.queuedById.delete(r.id);
      }
      if (r.answered) continue; // given up while it waited
      r.sentAt = performance.now();
      this.sentById.set(r.id, r);
      this.onStream.set(r.owner, (this.onStream.get(r.owner) ?? 0) + 1);
      link.waiting.push(r);
      link.stream.write({ ID: r.id });
    }
  }

  /** Whether the owner has OWNER_WINDOW renewals on the stream. */
  private full(owner: string): boolean {
    return (this.onStream.get(owner) ?? 0) >= OWNER_WINDOW;
  }

  /** A renewal of owner left the stream (answered, or taken to be sent again): its queue may take turns again. */
  private offStream(owner: string): void {
    const n = (this.onStream.get(owner) ?? 1) - 1;
    if (n > 0) this.onStream.set(owner, n);
    else this.onStream.delete(owner);
    const parked = this.parked.get(owner);
    if (parked && n < OWNER_WINDOW) {
      this.parked.delete(owner);
      this.queues.set(owner, parked); // at the back of the turn order
    }
  }

  /** etcd has answered (or will never answer) the renewal sent of r's lease: a held one may go now. */
  private settled(r: Renewal): void {
    if (this.sentById.get(r.id) !== r) return;
    this.sentById.delete(r.id);
    const next = this.held.get(r.id);
    if (!next) return;
    this.held.delete(r.id);
    if (this.queuedById.get(r.id) === next) this.queuedById.delete(r.id);
    if (!next.answered) this.ready.push(next);
  }

  close(): void {
    this.closed = true;
    this.failAll(unavailable("lease keepalive", new Error("closing")));
  }

  /** Opens a stream unless one is open or opening; renewals wait in their queues meanwhile. */
  private open(): void {
    if (this.link || this.opening || this.closed) return;
    this.opening = true;
    this.calls.run("lease keepalive", () => this.etcd.leaseClient.leaseKeepAlive()).then(
      (stream) => {
        this.opening = false;
        if (this.closed) return void stream.cancel();
        const link: Link = { stream, waiting: [], head: 0, answered: false };
        this.link = link;
        stream.on("data", (res) => this.answer(link, res));
        stream.on("error", (err) => this.lost(link, unavailable("lease keepalive", err), true));
        stream.on("end", () => this.lost(link, unavailable("lease keepalive", new Error("stream ended")), true));
        this.pump();
      },
      (err: unknown) => {
        this.opening = false;
        // No stream to send them on: etcd cannot be reached. The next renewal tries again.
        this.failAll(err instanceof DomainError ? err : unavailable("lease keepalive", err));
      },
    );
  }

  /**
   * A stream stopped working. Its unanswered renewals are sent again on a new stream, unless it failed
   * before etcd answered anything on it: then etcd is away, and they are answered UNAVAILABLE now.
   */
  private lost(link: Link, err: DomainError, failed: boolean): void {
    if (link !== this.link) return;
    this.link = undefined;
    link.stream.cancel();
    const unsettled = link.waiting.slice(link.head);
    for (const r of unsettled) this.offStream(r.owner);
    // Given up already: not sent again, so etcd will not answer them; their lease's held renewal may go.
    for (const r of unsettled) if (r.answered) this.settled(r);
    const unanswered = unsettled.filter((r) => !r.answered);
    if (failed && !link.answered) {
      this.resend.push(...unanswered);
      return this.failAll(err);
    }
    this.resend = [...unanswered, ...this.resend];
    if (this.resend.length > 0 || this.queued > 0) {
      this.open();
    }
  }

  private answer(link: Link, res: ILeaseKeepAliveResponse): void {
    if (link !== this.link) return;
    const r = link.waiting[link.head];
    if (!r) return;
    if (r.id !== res.ID) {
      // Not the order etcd keeps: no answer on this stream can be trusted any more.
      return this.lost(link, unavailable("lease keepalive", new Error(`answer for lease ${res.ID} where ${r.id} was due`)), false);
    }
    link.answered = true;
    link.waiting[link.head++] = undefined as never;
    this.offStream(r.owner);
    if (link.head > 1024 && link.head * 2 > link.waiting.length) {
      link.waiting = link.waiting.slice(link.head);
      link.head = 0;
    }
    const seconds = (performance.now() - r.askedAt) / 1000;
    this.calls.observe("lease renew", seconds);
    if (!r.answered) {
      r.answered = true;
      for (const c of r.callers) c.resolve(Number(res.TTL));
    }
    this.settled(r);
    this.pump();
    if (link.waiting.length === link.head && this.queued === 0 && this.resend.length === 0 && this.ready.length === 0 && this.held.size === 0) this.stopSweeping();
  }

  /** Answers UNAVAILABLE to renewals past the timeout; replaces the stream when it has gone silent. */
  private sweep(): void {
    const now = performance.now();
    // How late this sweep runs: a busy event loop, not etcd, kept answers from being read meanwhile.
    const lag = this.lastSweep === undefined ? 0 : now - this.lastSweep - this.sweepEveryMs;
    this.lastSweep = now;
    const link = this.link;
    const sent = link ? link.waiting.length - link.head : 0;
    if (sent === 0 && this.queued === 0 && this.resend.length === 0 && this.ready.length === 0 && this.held.size === 0 && !this.opening) return this.stopSweeping();
    const late = unavailable("lease renew", new Error(`no answer within ${this.renewTimeoutMs} ms`));
    const giveUp = (r: Renewal) => {
      if (r.answered || now - r.askedAt <= this.renewTimeoutMs) return;
      r.answered = true;
      this.calls.observe("lease renew", (now - r.askedAt) / 1000, late);
      for (const c of r.callers) c.reject(late);
    };
    // Sent in turn order, not in the order asked: all of them are looked at (the window is small).
    if (link) for (let i = link.head; i < link.waiting.length; i++) giveUp(link.waiting[i]);
    this.resend.forEach(giveUp);
    this.resend = this.resend.filter((r) => !r.answered);
    this.ready.forEach(giveUp);
    this.ready = this.ready.filter((r) => !r.answered);
    // A held renewal given up leaves (and is no longer joinable): the next request for its lease waits anew.
    for (const [id, r] of this.held) {
      giveUp(r);
      if (r.answered) {
        this.held.delete(id);
        if (this.queuedById.get(id) === r) this.queuedById.delete(id);
      }
    }
    // Unsent ones that waited their turn too long are answered too, and leave their queue (a queue is
    // in the order asked, so they are its head): a flood that etcd cannot keep up with costs its sender
    // its renewals, and neither memory nor the sweeps' time.
    for (const queues of [this.queues, this.parked]) {
      for (const [owner, queue] of queues) {
        for (let r = queue.peek(); r && (r.answered || now - r.askedAt > this.renewTimeoutMs); r = queue.peek()) {
          queue.shift();
          this.queued--;
          giveUp(r);
          if (this.queuedById.get(r.id) === r) this.queuedById.delete(r.id);
        }
        if (queue.length === 0) queues.delete(owner);
      }
    }
    const oldest = link?.waiting[link.head];
    if (!link || !oldest || now - oldest.sentAt <= this.stallMs || lag > this.stallMs / 2) return;
    // Silent for stallMs, as far as this process can tell: answers that arrived while the event loop was
    // busy are read before the stream is judged (setImmediate runs after pending I/O).
    setImmediate(() => {
      if (link === this.link && link.waiting[link.head] === oldest) {
        this.lost(link, unavailable("lease keepalive", new Error(`no answer within ${Math.round(this.stallMs)} ms`)), false);
      }
    });
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Answers every renewal not answered yet with err, and gives the stream up. */
  private failAll(err: DomainError): void {
    const link = this.link;
    this.link = undefined;
    link?.stream.cancel();
    const queued = [...this.queues.values(), ...this.parked.values()].flatMap((q) => q.all());
    const waiting = [...(link ? link.waiting.slice(link.head) : []), ...this.resend, ...this.ready, ...this.held.values(), ...queued];
    this.resend = [];
    this.ready = [];
    this.held.clear();
    this.sentById.clear();
    this.queues.clear();
    this.parked.clear();
    this.onStream.clear();
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
