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
import type { Etcd3, IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from "etcd3";
import { DomainError, unavailable } from "../domain/errors.js";
import type { EtcdCalls } from "./calls.js";
import { EtcdLeaseNotFound } from "./errors.js";
import { eventually } from "./retry.js";

type KeepAliveStream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

interface Renewal {
  readonly id: string;
  readonly sentAt: number;
  /** Set once the caller has its answer (a TTL, or UNAVAILABLE after the timeout). */
  answered: boolean;
  resolve(ttl: number): void;
  reject(err: Error): void;
}

/** A stream whose oldest unanswered renewal is this many timeouts old is given up. */
const DEAD_AFTER_TIMEOUTS = 3;

export class Leases {
  private stream?: Promise<KeepAliveStream>;
  /** The open stream whose answers the queue waits for. */
  private current?: KeepAliveStream;
  /** Sent renewals in the order sent, from head on; the ones before head are answered. */
  private waiting: Renewal[] = [];
  private head = 0;
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly etcd: Etcd3,
    private readonly calls: EtcdCalls,
    private readonly renewTimeoutMs: number,
  ) {}

  async grant(ttlSeconds: number): Promise<{ id: bigint; ttlSeconds: number }> {
    const res = await this.calls.run("lease grant", () => this.etcd.leaseClient.leaseGrant({ TTL: ttlSeconds }));
    return { id: BigInt(res.ID), ttlSeconds: Number(res.TTL) };
  }

  /** Revokes a lease and with it every key attached. False if it was already gone. */
  async revoke(id: bigint): Promise<boolean> {
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

  /**
   * Renews a lease once. Resolves with the TTL etcd reports after the renewal, or 0 if the lease is gone.
   * Rejects with UNAVAILABLE if etcd does not answer within the renewal timeout.
   */
  async renew(id: bigint): Promise<number> {
    const stream = await this.keepAliveStream();
    // The stream failed while this renewal waited for it to open: nothing would answer on it.
    if (stream !== this.current) throw unavailable("lease renew", new Error("the keepalive stream to etcd failed"));
    return new Promise<number>((resolve, reject) => {
      this.waiting.push({ id: id.toString(), sentAt: performance.now(), answered: false, resolve, reject });
      stream.write({ ID: id.toString() });
      this.sweeper ??= setInterval(() => this.sweep(), Math.max(50, this.renewTimeoutMs / 4));
    });
  }

  /** How many renewals wait for etcd's answer. */
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
    const seconds = (performance.now() - r.sentAt) / 1000;
    this.calls.observe("lease renew", seconds);
    if (!r.answered) {
      r.answered = true;
      r.resolve(Number(res.TTL));
    }
    if (this.pending === 0) this.stopSweeping();
  }

  /** Answers UNAVAILABLE to renewals past the timeout; gives the stream up when it has gone silent. */
  private sweep(): void {
    const now = performance.now();
    const oldest = this.waiting[this.head];
    if (!oldest) return this.stopSweeping();
    if (now - oldest.sentAt > DEAD_AFTER_TIMEOUTS * this.renewTimeoutMs) {
      this.failAll(unavailable("lease keepalive", new Error(`no answer within ${DEAD_AFTER_TIMEOUTS * this.renewTimeoutMs} ms`)));
      return;
    }
    const late = unavailable("lease renew", new Error(`no answer within ${this.renewTimeoutMs} ms`));
    for (let i = this.head; i < this.waiting.length; i++) {
      const r = this.waiting[i];
      if (now - r.sentAt <= this.renewTimeoutMs) break;
      if (!r.answered) {
        r.answered = true;
        this.calls.observe("lease renew", (now - r.sentAt) / 1000, late);
        r.reject(late);
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
    const waiting = this.waiting.slice(this.head);
    this.waiting = [];
    this.head = 0;
    this.stopSweeping();
    for (const r of waiting) {
      if (r.answered) continue;
      r.answered = true;
      r.reject(err);
    }
  }
}
