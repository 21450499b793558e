// A held lease: its token, a signal aborted the moment it can no longer be assumed held, and the store
// calls a holder makes, with the token attached. Reading `signal` or `held` looks at the clock first, so
// a process that was paused past the deadline sees the loss on its first look, before any timer has run.
// A lease is kept alive by its keeper (keeper.ts): an etcd lease of its own, or a session it shares with
// other leases, whose deadline is its deadline and whose loss is its loss.
import { LeaseLostError, LeaseNotHeldError, StaleTokenError, type LossCause } from "./errors.js";
import type { Emitter } from "./events.js";
import type { Keeper } from "./keeper.js";
import type { Commit, Entry, FenceModeName, GetResult, ListOptions, ReadOptions, Store, TxnOp, Value, WriteOptions } from "./store.js";
import type { Token } from "./token.js";

/** What a lease needs from the client that acquired it. */
export interface LeaseContext {
  readonly store: Store;
  readonly emit: Emitter;
  /** The fence mode of writes through a lease when a call does not say. */
  readonly fenceMode: FenceModeName;
  /** Called once when the lease ends, whatever the cause. */
  ended(lease: Lease): void;
  /** LeaseService.Proclaim under token: the revision at which the value took effect. */
  proclaim(token: Token, value: Uint8Array): Promise<bigint>;
}

export class Lease {
  readonly token: Token;
  /** The TTL etcd granted (the session's, for a lease on a session), in ms. */
  readonly ttlMs: number;
  readonly #ctx: LeaseContext;
  readonly #keeper: Keeper;
  readonly #controller = new AbortController();
  readonly #stopWatching: () => void;
  #ending?: Promise<void>;

  /** Made by FencekeeperClient.acquire(); `until` ends the lease when it aborts. */
  constructor(token: Token, keeper: Keeper, ctx: LeaseContext, until?: AbortSignal) {
    this.token = token;
    this.ttlMs = keeper.ttlMs;
    this.#ctx = ctx;
    this.#keeper = keeper;
    const cancel = () => this.#lose("canceled", until?.reason);
    until?.addEventListener("abort", cancel, { once: true });
    this.#stopWatching = () => until?.removeEventListener("abort", cancel);
    lookFirst(this.#controller.signal, () => keeper.expireIfPassed());
    keeper.attach(this, (why, cause, ending) => this.#end(why, cause, ending));
    if (ctx.emit.listening) ctx.emit({ type: "acquired", token: this.token, ttlMs: this.ttlMs, validUntil: this.validUntil });
    if (until?.aborted) cancel();
  }

  /** Aborted, with a LeaseLostError as its reason, once the lease can no longer be assumed held. */
  get signal(): AbortSignal {
    if (!this.#controller.signal.aborted) this.#keeper.expireIfPassed();
    return this.#controller.signal;
  }

  /** Whether the lease may still be assumed held, by the clock right now. */
  get held(): boolean {
    return !this.signal.aborted;
  }

  /**
   * Until when the lease may be assumed held: the send time of the last confirmed renewal + TTL - drift
   * margin; on a session, of the session's last confirmed renewal.
   */
  get validUntil(): Date {
    return this.#keeper.deadline.validUntil;
  }

  /** When the last renewal was confirmed (or the Acquire, or the OpenSession, answered). */
  get lastConfirmedAt(): Date {
    return this.#keeper.deadline.lastConfirmedAt;
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

  /**
   * Publishes a new value with this acquisition (the one given to acquire() or campaign() until now),
   * keeping the lease: what Describe, Observe, leader() and observeLeaders() show. The revision at which
   * it took effect. A lease the server no longer holds is refused (StaleTokenError when a newer holder
   * was granted, LeaseNotHeldError otherwise) and is lost with it, as after a refused write.
   */
  proclaim(value: Value): Promise<bigint> {
    const bytes = typeof value === "string" ? new TextEncoder().encode(value) : value;
    return this.#write(() => this.#ctx.proclaim(this.token, bytes));
  }

  #writeOptions(o: WriteOptions): WriteOptions {
    return { ...o, mode: o.mode ?? this.#ctx.fenceMode };
  }

  async #write<T>(call: () => Promise<T>): Promise<T> {
    this.check();
    try {
      return await call();
    } catch (err) {
      if (err instanceof StaleTokenError || err instanceof LeaseNotHeldError) this.#lose("fenced", err);
      throw err;
    }
  }

  /** Ends this lease on its own (released, fenced, canceled); a session it was on lives on. */
  #lose(why: LossCause, cause?: unknown): void {
    if (this.#controller.signal.aborted) return;
    this.#end(why, cause, this.#keeper.leaseEnded(this, why));
  }

  #end(why: LossCause, cause: unknown, ending: Promise<void>): void {
    if (this.#controller.signal.aborted) return;
    const validUntil = this.validUntil;
    const error = new LeaseLostError(lossMessage(this.token, why, validUntil, cause, this.#keeper.shared), why, this.token, validUntil, this.lastConfirmedAt, new Date(), {
      cause,
    });
    this.#stopWatching();
    this.#ending = ending;
    this.#ctx.ended(this);
    this.#controller.abort(error);
    this.#ctx.emit(why === "released" || why === "canceled" ? { type: "released", token: this.token } : { type: "lost", error });
  }
}

const abortedOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!;

/**
 * Makes `signal.aborted` (and throwIfAborted()) look at the clock first, as Lease.signal does: code that
 * kept the signal itself (lead()'s onElected does) sees a loss on its first look after a pause, before
 * the keeper's timer has had a chance to run.
 */
function lookFirst(signal: AbortSignal, look: () => void): void {
  let looking = false;
  Object.defineProperty(signal, "aborted", {
    configurable: true,
    get() {
      // Looking can abort the signal, and the abort reads aborted again: look once.
      if (!looking && !abortedOf.call(signal)) {
        looking = true;
        try {
          look();
        } finally {
          looking = false;
        }
      }
      return abortedOf.call(signal);
    },
  });
  signal.throwIfAborted = () => {
    if (signal.aborted) throw signal.reason;
  };
}

function lossMessage(t: Token, why: LossCause, validUntil: Date, cause: unknown, onSession: boolean): string {
  const lease = `the lease on "${t.resource}" (generation ${t.generation}${onSession ? `, on session ${t.leaseId}` : ""})`;
  switch (why) {
    case "deadline":
      return `${lease} is lost: no renewal${onSession ? " of its session" : ""} was confirmed before its deadline ${validUntil.toISOString()}`;
    case "not-found":
      return `${lease} is lost: the server says ${onSession ? "its session expired or was closed" : "it expired or was released"}`;
    case "preempted": {
      const p = cause as { byPrincipal?: string; byGeneration?: bigint } | undefined;
      const by = p?.byPrincipal ? ` by "${p.byPrincipal}"` : "";
      const gen = p?.byGeneration ? ` (now generation ${p.byGeneration})` : "";
      return `${lease} is lost: it was preempted${by}${gen}; its writes are refused`;
    }
    case "fenced":
      return `${lease} is lost: a write under its token was refused (${cause instanceof Error ? cause.message : String(cause)})`;
    case "released":
      return `${lease} was released`;
    case "canceled":
      return `${lease} ended: the signal given to acquire() aborted`;
  }
}
