// One KeepAlive stream per client, carrying the renewals of every lease and session it keeps, and one
// scheduler that decides when each is renewed and when each is lost.
//
// Each kept lease (a lease of its own, or a session) is renewed every third of its TTL. There is no
// timer per lease: the leases sit in two heaps, one by when the next renewal is due and one by deadline,
// and a single timer is armed for the earlier of the first of each. When it fires, leases whose deadline
// has passed are given up first (a renewal sent after the deadline could prove nothing), then every
// renewal due within the next BATCH_WINDOW_MS goes out in one KeepAliveRequest (lease_ids, up to 10,000
// per message), all with the one send time. So 10,000 leases of a 10 s TTL cost about 20 messages a
// second, not 3,000 messages and 3,000 timers, and the loss of a lease is reported by the timer armed for
// its deadline, within the timer's latency, not at the next tick.
//
// An answer is matched to the lease's unanswered renewal on the same stream (at most one at a time),
// whose send time is what the lease's deadline counts from; an answer that arrives after the deadline
// proves nothing. A stream that fails, ends, or leaves a renewal unanswered for a whole renewal interval
// while answering nothing else in that time is dropped and opened again, on the next server, after a
// backoff. Losing a lease is not decided here: each kept lease does that from its own deadline, on a
// look or when the scheduler tells it to.
import { type Instant, now } from "./clock.js";
import { backoffDelay, type BackoffOptions } from "./backoff.js";
import { AsyncQueue } from "./async-queue.js";
import type { Deadline } from "./deadline.js";
import { toMs } from "./duration.js";
import { statusToError } from "./error-mapping.js";
import type { FencekeeperError } from "./errors.js";
import type { Emitter } from "./events.js";
import { IndexedHeap } from "./heap.js";
import type { LeaseRenewal } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import type { Status } from "../gen/ts/google/rpc/status_pb.js";
import type { Servers } from "./servers.js";

/** What the scheduler needs of a kept lease (a lease of its own, or a session). */
export interface Renewable {
  readonly leaseId: bigint;
  readonly intervalMs: number;
  readonly deadline: Deadline;
  /** Looks at the clock: once the deadline has passed, the lease reports its loss (and is removed). True once it has ended. */
  expireIfPassed(): boolean;
  /** A renewal sent at `sentAt` was answered at `at` with the TTL etcd granted. */
  confirmed(sentAt: Instant, ttlMs: number, at: Instant): void;
  /** A renewal was answered with an error. */
  refused(error: FencekeeperError): void;
}

interface Entry {
  readonly r: Renewable;
  /** When the next renewal is due (monotonic ms). */
  nextAt: number;
  /** The renewable's deadline on the monotonic clock, as the loss heap last saw it. */
  deadlineAt: number;
  /** The entry's places in the two heaps (-1: not in). */
  dueIx: number;
  lossIx: number;
  /** The unanswered renewal: when it was sent (shared by its whole message), and on which stream. */
  sentAt?: Instant;
  sentOn?: Stream;
}

interface Stream {
  readonly url: string;
  /** When an answer last arrived on it (monotonic ms), or when it opened. */
  answeredAt: number;
  readonly requests: AsyncQueue<{ leaseIds: bigint[] }>;
  readonly abort: AbortController;
}

/** After an answer that proves nothing, try again this soon (or at the renewal interval, if sooner). */
const RETRY_MS = 200;
/** Renewals due within this long of the one that woke the scheduler go out with it, a little early. */
export const BATCH_WINDOW_MS = 50;
/** How often a renewal unanswered for a whole interval is looked at again, while its stream still answers others. */
const RECHECK_MS = 2 * BATCH_WINDOW_MS;
/** The most lease ids the server takes in one KeepAliveRequest. */
export const MAX_IDS_PER_MESSAGE = 10_000;

export class KeepAlive {
  private readonly entries = new Map<bigint, Entry>();
  private readonly due = new IndexedHeap<Entry>((e) => e.nextAt, { get: (e) => e.dueIx, set: (e, i) => (e.dueIx = i) });
  private readonly loss = new IndexedHeap<Entry>((e) => e.deadlineAt, { get: (e) => e.lossIx, set: (e, i) => (e.lossIx = i) });
  /** Entries taken off the due heap during a flush, to be put back after it (reused). */
  private readonly later: Entry[] = [];
  private timer?: NodeJS.Timeout;
  /** When the timer fires (monotonic ms). */
  private armedAt = Infinity;
  private stream?: Stream;
  private reconnect?: NodeJS.Timeout;
  private failures = 0;
  private readonly tick = () => this.run();

  constructor(
    private readonly servers: Servers,
    private readonly backoff: BackoffOptions,
    private readonly emit: Emitter,
  ) {}

  /** Keeps `r` alive from now on; its first renewal is due at `firstAt` (monotonic ms). */
  add(r: Renewable, firstAt: number): void {
    const e: Entry = { r, nextAt: firstAt, deadlineAt: r.deadline.mono, dueIx: -1, lossIx: -1 };
    this.remove(r.leaseId);
    this.entries.set(r.leaseId, e);
    this.due.push(e);
    this.loss.push(e);
    this.arm();
  }

  /** Stops renewing a lease. The stream closes with the last one. */
  remove(leaseId: bigint): void {
    const e = this.entries.get(leaseId);
    if (!e) return;
    this.entries.delete(leaseId);
    this.due.remove(e);
    this.loss.remove(e);
    e.sentAt = e.sentOn = undefined;
    if (this.entries.size === 0) this.stop();
  }

  close(): void {
    this.entries.clear();
    this.due.clear();
    this.loss.clear();
    this.stop();
  }

  /** Arms the one timer for the earliest deadline or due renewal (renewals wait while a reconnection is pending). */
  private arm(): void {
    let next = Infinity;
    const l = this.loss.peek();
    if (l) next = performance.now() + l.r.deadline.msLeft();
    const d = this.due.peek();
    if (d && !this.reconnect && d.nextAt < next) next = d.nextAt;
    if (next === Infinity) return this.disarm();
    if (this.timer && this.armedAt <= next) return;
    clearTimeout(this.timer);
    this.armedAt = next;
    this.timer = setTimeout(this.tick, Math.max(0, Math.ceil(next - performance.now())));
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedAt = Infinity;
  }

  private run(): void {
    this.disarm();
    // Deadlines first: a lease whose deadline passed is lost, whatever a renewal sent now would answer.
    for (let e = this.loss.peek(); e && e.r.deadline.passed(); e = this.loss.peek()) {
      if (!e.r.expireIfPassed()) break;
      if (this.loss.peek() === e) this.remove(e.r.leaseId);
    }
    const d = this.due.peek();
    if (d && !this.reconnect && d.nextAt <= performance.now() + BATCH_WINDOW_MS) this.flush();
    this.arm();
  }

  /** Sends every renewal due within the batch window, in as few messages as the limit allows. */
  private flush(): void {
    const s = this.ensureStream();
    if (!s) return; // reconnecting: the renewals go out when the stream opens
    const sentAt = now();
    const until = sentAt.mono + BATCH_WINDOW_MS;
    const later = this.later;
    let ids: bigint[] = [];
    let hung: Entry | undefined;
    for (let e = this.due.peek(); e && e.nextAt <= until; e = this.due.peek()) {
      this.due.pop();
      // Also by the wall clock, which orders deadlines differently only after it was stepped.
      if (e.r.expireIfPassed()) continue;
      if (e.sentOn === s && e.sentAt) {
        // Its last renewal on this stream is unanswered: the next one waits for it. Past a whole renewal
        // interval, the stream may be hung (see failIfHung); look again shortly, until it answers or is dropped.
        if (sentAt.mono - e.sentAt.mono >= e.r.intervalMs) {
          hung ??= e;
          e.nextAt = sentAt.mono + RECHECK_MS;
        } else {
          e.nextAt = e.sentAt.mono + e.r.intervalMs;
        }
        later.push(e);
        continue;
      }
      e.sentAt = sentAt;
      e.sentOn = s;
      e.nextAt = sentAt.mono + e.r.intervalMs;
      later.push(e);
      ids.push(e.r.leaseId);
      if (ids.length === MAX_IDS_PER_MESSAGE) {
        this.send(s, ids);
        ids = [];
      }
    }
    for (const e of later) if (this.entries.get(e.r.leaseId) === e) this.due.push(e);
    later.length = 0;
    if (ids.length > 0) this.send(s, ids);
    if (hung) this.failIfHung(s, hung);
  }

  /**
   * Gives the stream up if `e`'s renewal is still unanswered, a whole renewal interval after it was sent,
   * and nothing at all has been answered on the stream for as long: the server or the connection is hung,
   * and another server (or a new connection) may answer in time. A server that answers, only slowly (etcd
   * renewing slowly under a burst of writes), is kept: a new stream would queue behind the renewals it
   * still works on, and the answers on their way would be thrown away; that turned slowness into lost
   * leases. The check runs after what has arrived is read: after a stall of this process, its timers run
   * before the answers waiting in the socket (a timer's callback runs before I/O is read; setImmediate's,
   * after), and this process's own lag is no reason to drop a stream.
   */
  private failIfHung(s: Stream, e: Entry): void {
    setImmediate(() => {
      if (this.stream !== s || e.sentOn !== s || !e.sentAt) return;
      const at = performance.now();
      if (at - e.sentAt.mono < e.r.intervalMs) return;
      if (at - s.answeredAt < e.r.intervalMs) return;
      this.fail(s, new Error(`no answer to a renewal of lease ${e.r.leaseId} within ${Math.round(e.r.intervalMs)} ms`), true);
    });
  }

  private send(s: Stream, leaseIds: bigint[]): void {
    s.requests.push({ leaseIds });
    if (this.emit.listening) this.emit({ type: "keepalive-sent", url: s.url, leases: leaseIds.length });
  }

  private ensureStream(): Stream | undefined {
    if (this.stream) return this.stream;
    if (this.reconnect) return undefined;
    return this.open();
  }

  private open(): Stream {
    const url = this.servers.current;
    const s: Stream = { url, requests: new AsyncQueue(), abort: new AbortController(), answeredAt: performance.now() };
    this.stream = s;
    const answers = this.servers.connection("stream", url).lease.keepAlive(s.requests, { signal: s.abort.signal, timeoutMs: 0 });
    void (async () => {
      try {
        for await (const answer of answers) {
          s.answeredAt = performance.now();
          if (answer.renewals.length > 0) this.answerAll(s, answer.renewals);
          else this.answer(s, answer.leaseId, answer.ttl, answer.error, now());
        }
        this.fail(s, new Error("the server ended the KeepAlive stream"), false);
      } catch (err) {
        this.fail(s, err, false);
      }
    })();
    this.emit({ type: "stream-opened", url });
    return s;
  }

  private answerAll(s: Stream, renewals: LeaseRenewal[]): void {
    const at = now();
    for (const r of renewals) this.answer(s, r.leaseId, r.ttl, r.error, at);
  }

  private answer(s: Stream, leaseId: bigint, ttl: { seconds: bigint; nanos: number } | undefined, error: Status | undefined, at: Instant): void {
    if (this.stream !== s) return;
    this.failures = 0;
    const e = this.entries.get(leaseId);
    if (!e || e.sentOn !== s || !e.sentAt) return;
    const sentAt = e.sentAt;
    e.sentAt = e.sentOn = undefined;
    if (error) {
      e.r.refused(statusToError(error));
      if (this.entries.get(leaseId) === e) {
        e.nextAt = at.mono + Math.min(RETRY_MS, e.r.intervalMs);
        this.due.update(e);
        this.arm();
      }
    } else if (ttl) {
      e.r.confirmed(sentAt, toMs(ttl), at);
      // The deadline moved later: the timer, if armed for the old one, wakes once for nothing.
      if (this.entries.get(leaseId) === e && e.r.deadline.mono !== e.deadlineAt) {
        e.deadlineAt = e.r.deadline.mono;
        this.loss.update(e);
      }
    }
  }

  /** Drops a stream that failed; renewals it left unanswered go out again on the next one. */
  private fail(s: Stream, error: unknown, hung: boolean): void {
    if (this.stream !== s) return;
    this.stream = undefined;
    s.abort.abort();
    s.requests.close();
    // A hung connection may be a dead one: the next attempt on that server opens a fresh connection.
    if (hung) this.servers.reset("stream", s.url);
    this.servers.failed(s.url);
    const at = performance.now();
    for (const e of this.entries.values()) {
      if (e.sentOn !== s) continue;
      e.sentAt = e.sentOn = undefined;
      e.nextAt = at;
      this.due.update(e);
    }
    if (this.entries.size === 0) return;
    const retryInMs = backoffDelay(this.failures++, this.backoff);
    this.emit({ type: "stream-failed", url: s.url, error, retryInMs });
    this.reconnect = setTimeout(() => {
      this.reconnect = undefined;
      if (this.entries.size > 0 && !this.stream) this.open();
      this.run();
    }, retryInMs);
    this.arm();
  }

  private stop(): void {
    this.disarm();
    clearTimeout(this.reconnect);
    this.reconnect = undefined;
    const s = this.stream;
    this.stream = undefined;
    s?.abort.abort();
    s?.requests.close();
  }
}
