// A held lease: its token, a signal aborted the moment it can no longer be assumed held, and the store
// calls a holder makes, with the token attached. Reading `signal` or `held` looks at the clock first, so
// a process that was paused past the deadline sees the loss on its first look, before any timer has run.
import { now, type Instant } from "./clock.js";
import { Deadline } from "./deadline.js";
import { LeaseLostError, LeaseNotFoundError, LeaseNotHeldError, StaleTokenError, type FencekeeperError, type LossCause } from "./errors.js";
import type { EventSink } from "./events.js";
import type { KeepAlive, Renewable } from "./keepalive.js";
import type { Commit, Entry, FenceModeName, GetResult, ListOptions, ReadOptions, Store, TxnOp, Value, WriteOptions } from "./store.js";
import type { Token } from "./token.js";

/** What a lease needs from the client that acquired it. */
export interface LeaseContext {
  readonly store: Store;
  readonly keepAlive: KeepAlive;
  readonly emit: EventSink;
  /** The fence mode of writes through a lease when a call does not say. */
  readonly fenceMode: FenceModeName;
  readonly driftMs: (ttlMs: number) => number;
  /** Gives the lease up on the server; never throws (an unreachable server lets it expire). */
  release(token: Token): Promise<void>;
  /** Called once when the lease ends, whatever the cause. */
  ended(lease: Lease): void;
}

export interface Grant {
  token: Token;
  /** The TTL etcd granted, in ms. */
  ttlMs: number;
  /** When the grant (the Acquire, or a renewal right after it) was sent, and when its answer came. */
  sentAt: Instant;
  answeredAt: Instant;
}

export class Lease {
  readonly token: Token;
  /** The TTL etcd granted, in ms. */
  readonly ttlMs: number;
  readonly #ctx: LeaseContext;
  readonly #controller = new AbortController();
  readonly #deadline: Deadline;
  readonly #stopWatching: () => void;
  #timer?: NodeJS.Timeout;
  #ending?: Promise<void>;

  /** Made by FencekeeperClient.acquire(); `until` ends the lease when it aborts. */
  constructor(grant: Grant, ctx: LeaseContext, until?: AbortSignal) {
    this.token = grant.token;
    this.ttlMs = grant.ttlMs;
    this.#ctx = ctx;
    this.#deadline = new Deadline(grant.sentAt, grant.ttlMs, grant.answeredAt, ctx.driftMs);
    const cancel = () => this.#lose("canceled", until?.reason);
    until?.addEventListener("abort", cancel, { once: true });
    this.#stopWatching = () => until?.removeEventListener("abort", cancel);
    this.#arm();
    const intervalMs = grant.ttlMs / 3;
    ctx.keepAlive.add(this.#renewable(intervalMs), grant.sentAt.mono + intervalMs);
    ctx.emit({ type: "acquired", token: this.token, ttlMs: this.ttlMs, validUntil: this.validUntil });
    if (until?.aborted) cancel();
  }

  /** Aborted, with a LeaseLostError as its reason, once the lease can no longer be assumed held. */
  get signal(): AbortSignal {
    this.#expireIfPassed();
    return this.#controller.signal;
  }

  /** Whether the lease may still be assumed held, by the clock right now. */
  get held(): boolean {
    return !this.signal.aborted;
  }

  /** Until when the lease may be assumed held: the send time of the last confirmed renewal + TTL - drift margin. */
  get validUntil(): Date {
    return this.#deadline.validUntil;
  }

  /** When the last renewal was confirmed (or the Acquire answered). */
  get lastConfirmedAt(): Date {
    return this.#deadline.lastConfirmedAt;
  }

  /** Throws the LeaseLostError once the lease is lost; call it right before acting on the lease. */
  check(): void {
    if (this.signal.aborted) throw this.#controller.signal.reason;
  }

  /** Gives the lease up: renewals stop, the signal aborts, the server releases it. Idempotent; never throws. */
  release(): Promise<void> {
    this.#lose("released");
    return this.#ending!;
  }

  put(key: string, value: Value, o: WriteOptions = {}): Promise<Commit> {
    return this.#write(() => this.#ctx.store.put(this.token, key, value, this.#writeOptions(o)));
  }

  delete(key: string, o: WriteOptions = {}): Promise<Commit> {
    return this.#write(() => this.#ctx.store.delete(this.token, key, this.#writeOptions(o)));
  }

  txn(ops: TxnOp[], o: WriteOptions = {}): Promise<Commit> {
    return this.#write(() => this.#ctx.store.txn(this.token, ops, this.#writeOptions(o)));
  }

  async get(key: string, o: ReadOptions = {}): Promise<GetResult> {
    this.check();
    return this.#ctx.store.get(this.token.resource, key, o);
  }

  list(o: ListOptions = {}): AsyncGenerator<Entry> {
    this.check();
    return this.#ctx.store.list(this.token.resource, o);
  }

  #writeOptions(o: WriteOptions): WriteOptions {
    return { ...o, mode: o.mode ?? this.#ctx.fenceMode };
  }

  async #write(call: () => Promise<Commit>): Promise<Commit> {
    this.check();
    try {
      return await call();
    } catch (err) {
      if (err instanceof StaleTokenError || err instanceof LeaseNotHeldError) this.#lose("fenced", err);
      throw err;
    }
  }

  #renewable(intervalMs: number): Renewable {
    return {
      leaseId: this.token.leaseId,
      intervalMs,
      valid: () => !this.#expireIfPassed(),
      confirmed: (sentAt: Instant, ttlMs: number) => {
        if (this.#controller.signal.aborted) return;
        const at = now();
        if (!this.#deadline.confirm(sentAt, ttlMs, at)) return this.#lose("deadline");
        this.#arm();
        this.#ctx.emit({
          type: "renewed",
          token: this.token,
          sentAt: new Date(sentAt.wall),
          confirmedAt: new Date(at.wall),
          ttlMs,
          validUntil: this.validUntil,
        });
      },
      refused: (error: FencekeeperError) => {
        if (error instanceof LeaseNotFoundError) this.#lose("not-found", error);
        else this.#ctx.emit({ type: "renewal-failed", token: this.token, error });
      },
    };
  }

  /** Ends the lease as lost if its deadline has passed; true once the lease has ended for any cause. */
  #expireIfPassed(): boolean {
    if (!this.#controller.signal.aborted && this.#deadline.passed()) this.#lose("deadline");
    return this.#controller.signal.aborted;
  }

  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (!this.#expireIfPassed()) this.#arm();
    }, Math.max(0, Math.ceil(this.#deadline.msLeft())));
  }

  #lose(why: LossCause, cause?: unknown): void {
    if (this.#controller.signal.aborted) return;
    const error = new LeaseLostError(lossMessage(this.token, why, this.validUntil, cause), why, this.token, this.validUntil, this.lastConfirmedAt, new Date(), {
      cause,
    });
    clearTimeout(this.#timer);
    this.#stopWatching();
    this.#ctx.keepAlive.remove(this.token.leaseId);
    this.#controller.abort(error);
    // A lease the server says is gone needs no release; any other may still be held in etcd.
    this.#ending = why === "not-found" ? Promise.resolve() : this.#ctx.release(this.token);
    this.#ctx.ended(this);
    this.#ctx.emit(why === "released" || why === "canceled" ? { type: "released", token: this.token } : { type: "lost", error });
  }
}

function lossMessage(t: Token, why: LossCause, validUntil: Date, cause: unknown): string {
  const lease = `the lease on "${t.resource}" (generation ${t.generation})`;
  switch (why) {
    case "deadline":
      return `${lease} is lost: no renewal was confirmed before its deadline ${validUntil.toISOString()}`;
    case "not-found":
      return `${lease} is lost: the server says it expired or was released`;
    case "fenced":
      return `${lease} is lost: a write under its token was refused (${cause instanceof Error ? cause.message : String(cause)})`;
    case "released":
      return `${lease} was released`;
    case "canceled":
      return `${lease} ended: the signal given to acquire() aborted`;
  }
}
