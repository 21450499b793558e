// One KeepAlive stream per client, carrying the renewals of every lease it holds. Each lease is renewed
// every third of its TTL; an answer is matched to the renewal it answers, whose send time is what the
// lease's deadline counts from. A stream that fails, ends, or leaves a renewal unanswered for a whole
// renewal interval is dropped and opened again, on the next server, after a backoff. Losing a lease is not
// decided here: each lease does that from its own deadline.
import { type Instant, now } from "./clock.js";
import { backoffDelay, type BackoffOptions } from "./backoff.js";
import { AsyncQueue } from "./async-queue.js";
import { toMs } from "./duration.js";
import { statusToError } from "./error-mapping.js";
import type { FencekeeperError } from "./errors.js";
import type { EventSink } from "./events.js";
import type { Status } from "../gen/ts/google/rpc/status_pb.js";
import type { Servers } from "./servers.js";

/** What the stream needs of a lease. */
export interface Renewable {
  readonly leaseId: bigint;
  readonly intervalMs: number;
  /** False once the lease's deadline has passed; the lease reports its own loss. */
  valid(): boolean;
  /** A renewal sent at `sentAt` was answered with the TTL etcd granted. */
  confirmed(sentAt: Instant, ttlMs: number): void;
  /** A renewal was answered with an error. */
  refused(error: FencekeeperError): void;
}

interface Entry {
  readonly r: Renewable;
  /** When the next renewal is due (monotonic ms). */
  nextAt: number;
  timer?: NodeJS.Timeout;
}

interface Stream {
  readonly url: string;
  readonly requests: AsyncQueue<{ leaseId: bigint }>;
  readonly abort: AbortController;
  /** The unanswered renewal of each lease on this stream: when it was sent. */
  readonly sent: Map<bigint, Instant>;
}

/** After an answer that proves nothing, try again this soon (or at the renewal interval, if sooner). */
const RETRY_MS = 200;

export class KeepAlive {
  private readonly entries = new Map<bigint, Entry>();
  private stream?: Stream;
  private reconnect?: NodeJS.Timeout;
  private failures = 0;

  constructor(
    private readonly servers: Servers,
    private readonly backoff: BackoffOptions,
    private readonly emit: EventSink,
  ) {}

  /** Keeps `r` alive from now on; its first renewal goes out at `firstAt` (monotonic ms). */
  add(r: Renewable, firstAt: number): void {
    const e: Entry = { r, nextAt: firstAt };
    this.entries.set(r.leaseId, e);
    this.schedule(e);
  }

  /** Stops renewing a lease. The stream closes with the last lease. */
  remove(leaseId: bigint): void {
    const e = this.entries.get(leaseId);
    if (!e) return;
    clearTimeout(e.timer);
    this.entries.delete(leaseId);
    this.stream?.sent.delete(leaseId);
    if (this.entries.size === 0) this.stop();
  }

  close(): void {
    for (const id of [...this.entries.keys()]) this.remove(id);
    this.stop();
  }

  private schedule(e: Entry): void {
    clearTimeout(e.timer);
    e.timer = setTimeout(() => this.due(e), Math.max(0, Math.ceil(e.nextAt - performance.now())));
  }

  private due(e: Entry): void {
    if (this.entries.get(e.r.leaseId) !== e || !e.r.valid()) return;
    if (performance.now() < e.nextAt) return this.schedule(e);
    const s = this.ensureStream();
    if (!s) return; // reconnecting: the renewal goes out when the stream opens
    const outstanding = s.sent.get(e.r.leaseId);
    if (outstanding && performance.now() - outstanding.mono >= e.r.intervalMs) {
      this.fail(s, new Error(`no answer to a renewal of lease ${e.r.leaseId} within ${Math.round(e.r.intervalMs)} ms`), true);
      return;
    }
    if (!outstanding) this.send(s, e);
    else {
      e.nextAt = outstanding.mono + e.r.intervalMs;
      this.schedule(e);
    }
  }

  private send(s: Stream, e: Entry): void {
    const at = now();
    s.sent.set(e.r.leaseId, at);
    s.requests.push({ leaseId: e.r.leaseId });
    e.nextAt = at.mono + e.r.intervalMs;
    this.schedule(e);
  }

  private ensureStream(): Stream | undefined {
    if (this.stream) return this.stream;
    if (this.reconnect) return undefined;
    return this.open();
  }

  private open(): Stream {
    const url = this.servers.current;
    const s: Stream = { url, requests: new AsyncQueue(), abort: new AbortController(), sent: new Map() };
    this.stream = s;
    const answers = this.servers.connection("stream", url).lease.keepAlive(s.requests, { signal: s.abort.signal, timeoutMs: 0 });
    void (async () => {
      try {
        for await (const answer of answers) this.answer(s, answer.leaseId, answer.ttl, answer.error);
        this.fail(s, new Error("the server ended the KeepAlive stream"), false);
      } catch (err) {
        this.fail(s, err, false);
      }
    })();
    this.emit({ type: "stream-opened", url });
    const at = performance.now();
    for (const e of this.entries.values()) {
      if (e.nextAt <= at && e.r.valid()) this.send(s, e);
    }
    return s;
  }

  private answer(
    s: Stream,
    leaseId: bigint,
    ttl: { seconds: bigint; nanos: number } | undefined,
    error: Status | undefined,
  ): void {
    if (this.stream !== s) return;
    this.failures = 0;
    const sentAt = s.sent.get(leaseId);
    const e = this.entries.get(leaseId);
    s.sent.delete(leaseId);
    if (!sentAt || !e) return;
    if (error) {
      e.r.refused(statusToError(error));
      if (this.entries.get(leaseId) === e) {
        e.nextAt = performance.now() + Math.min(RETRY_MS, e.r.intervalMs);
        this.schedule(e);
      }
    } else if (ttl) {
      e.r.confirmed(sentAt, toMs(ttl));
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
    for (const [id] of s.sent) {
      const e = this.entries.get(id);
      if (e) e.nextAt = at;
    }
    if (this.entries.size === 0) return;
    const retryInMs = backoffDelay(this.failures++, this.backoff);
    this.emit({ type: "stream-failed", url: s.url, error, retryInMs });
    this.reconnect = setTimeout(() => {
      this.reconnect = undefined;
      if (this.entries.size > 0 && !this.stream) this.open();
    }, retryInMs);
  }

  private stop(): void {
    clearTimeout(this.reconnect);
    this.reconnect = undefined;
    const s = this.stream;
    this.stream = undefined;
    s?.abort.abort();
    s?.requests.close();
  }
}
