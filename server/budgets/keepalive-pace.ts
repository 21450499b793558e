// KeepAlive is paced rather than refused: a caller's streams share one budget of messages a second and
// of renewals in flight. A caller over it is read more slowly (its streams are not read until the budget
// has room, so HTTP/2 flow control holds the sender back); its streams go on, and what it can make the
// server hold is bounded whatever it sends. While the event loop is saturated, every caller's message rate
// shrinks together (load-gauge.ts), and so do its renewals in flight: the caller that fills the loop is
// read more slowly and keeps fewer renewals ahead of others' in etcd's queue, and a caller that sends
// little is not slowed at all. (The streams a caller may hold open are a budget of the ledger:
// ledger.ts.)
import type { LoadShare } from "./load-gauge.js";
import type { CallerPresence } from "./presence.js";

export interface PaceSettings {
  /**
   * KeepAlive messages one caller may send per second over all its streams (bursts of twice that); a
   * caller that sends faster is read more slowly.
   */
  streamMessagesPerSecond: number;
  /** Renewals of one caller in flight or waiting to be sent, over all its streams; beyond it its streams are read no further. */
  renewalsInFlight?: number;
}

/**
 * Default of PaceSettings.renewalsInFlight. Small on purpose: renewals past what etcd answers in a second
 * or so only wait, and one that waits longer than the renewal timeout fails; a caller allowed 20,000 in
 * flight at 3,000 a second had every renewal time out behind its own (10,000 leases lost); 4,000 is about
 * a second of what one etcd answers on a 2-core machine, and enough for 3,000 a second at 1 s per renewal.
 */
export const DEFAULT_RENEWALS_IN_FLIGHT = 4_000;

/** The fewest renewals in flight a caller keeps however loaded the loop: a batch of the SDK's. */
const MIN_IN_FLIGHT = 100;

export class KeepAlivePace {
  private readonly budgets = new Map<string, SharedBudget>();

  constructor(
    private readonly caps: PaceSettings,
    /** The share of the message rate callers get now (load-gauge.ts); all of it without one. */
    private readonly load: LoadShare = { share: () => 1 },
    /** Which callers made calls lately (presence.ts): another caller's unary calls count too. */
    private readonly presence?: CallerPresence,
  ) {}

  /**
   * The share of the load gauge while two callers or more have streams open or made calls lately; a lone
   * caller has nobody to be fair to, and keeps its whole budget however busy the loop is.
   */
  private readonly contended: LoadShare = { share: () => (this.shared() ? this.load.share() : 1) };

  private shared(): boolean {
    if (this.budgets.size > 1) return true;
    if (!this.presence) return false;
    // The one caller with streams open is present too, though its streams started long ago.
    return this.presence.several(this.budgets.size === 1 ? this.budgets.values().next().value!.party : undefined);
  }

  /**
   * The KeepAlive budget of a caller, shared by all its streams on this replica (on every connection):
   * each stream holds it from open to end (close()). party: who the caller is to presence.ts (the caller
   * itself unless told otherwise).
   */
  keepAliveBudget(caller: string, party = caller): KeepAliveBudget {
    let shared = this.budgets.get(caller);
    if (!shared) {
      shared = new SharedBudget(party, this.caps.streamMessagesPerSecond, this.caps.renewalsInFlight ?? DEFAULT_RENEWALS_IN_FLIGHT, this.contended);
      this.budgets.set(caller, shared);
    }
    shared.streams++;
    return new KeepAliveBudget(shared, () => {
      if (--shared.streams === 0) {
        shared.stop();
        this.budgets.delete(caller);
      }
    });
  }
}

/** The budget that one caller's KeepAlive streams share: a token bucket of messages and a bound on renewals in flight. */
class SharedBudget {
  streams = 0;
  private tokens: number;
  private at = performance.now();
  private inFlight = 0;
  /** Messages read and waiting to be let in, in the order read (across the caller's streams). */
  private readonly queue: { count: number; owner: KeepAliveBudget; resolve: (letIn: boolean) => void }[] = [];
  private timer?: NodeJS.Timeout;

  constructor(
    /** Who the caller is to presence.ts. */
    readonly party: string,
    private readonly fullRate: number,
    private readonly maxInFlight: number,
    private readonly load: LoadShare,
  ) {
    this.tokens = 2 * fullRate;
  }

  /** Messages a second now: the configured rate, times the share the load leaves. */
  private get rate(): number {
    return this.fullRate * this.load.share();
  }

  /** Lets a message of count renewals in now (undefined), or queues it: true once let in, false if its stream ended first. */
  admit(count: number, owner: KeepAliveBudget): Promise<boolean> | undefined {
    if (this.queue.length === 0 && this.fits(count)) {
      this.take(count);
      return undefined;
    }
    return new Promise<boolean>((resolve) => {
      this.queue.push({ count, owner, resolve });
      this.drain();
    });
  }

  answered(count: number): void {
    this.inFlight -= count;
    if (this.queue.length > 0) this.drain();
  }

  /** A stream ended: its queued messages are let go (its reader is told by its signal), its renewals no longer count. */
  forget(owner: KeepAliveBudget, held: number): void {
    this.inFlight -= held;
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i].owner === owner) this.queue.splice(i, 1)[0].resolve(false);
    }
    if (this.queue.length > 0) this.drain();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private refill(): void {
    const now = performance.now();
    const rate = this.rate;
    this.tokens = Math.min(2 * rate, this.tokens + ((now - this.at) / 1000) * rate);
    this.at = now;
  }

  /**
   * Renewals in flight allowed now: the bound, times the share the load leaves (at least MIN_IN_FLIGHT).
   * Renewals in flight wait in etcd's queue ahead of everyone else's: a flood allowed 4,000 of them left
   * a bystander's renewal 1.5 s behind, past its 2 s TTL, on a loaded machine.
   */
  private get inFlightNow(): number {
    return Math.max(MIN_IN_FLIGHT, Math.floor(this.maxInFlight * this.load.share()));
  }

  /** A message fits when a token is left and its renewals fit in flight (one message always may, alone). */
  private fits(count: number): boolean {
    this.refill();
    return this.tokens >= 1 && (this.inFlight === 0 || this.inFlight + count <= this.inFlightNow);
  }

  private take(count: number): void {
    this.tokens -= 1;
    this.inFlight += count;
  }

  private drain(): void {
    while (this.queue.length > 0 && this.fits(this.queue[0].count)) {
      const next = this.queue.shift()!;
      this.take(next.count);
      next.resolve(true);
    }
    // Out of tokens: one timer for the caller, at the next token (renewals answered wake it otherwise).
    if (this.queue.length > 0 && this.tokens < 1 && !this.timer) {
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          this.drain();
        },
        Math.max(1, Math.ceil(((1 - this.tokens) / this.rate) * 1000)),
      );
    }
  }
}

/** One stream's hold on its caller's KeepAlive budget. */
export class KeepAliveBudget {
  /** Renewals of this stream let in and not answered yet. */
  private held = 0;
  private closed = false;

  constructor(
    private readonly shared: SharedBudget,
    private readonly release: () => void,
  ) {}

  /** Waits, if the caller is over its budget, until a message of count renewals may be handled. */
  admit(count: number): Promise<void> | undefined {
    if (this.closed) return undefined;
    const waiting = this.shared.admit(count, this);
    if (!waiting) {
      this.held += count;
      return undefined;
    }
    return waiting.then((letIn) => {
      if (!letIn) return;
      if (this.closed) this.shared.answered(count);
      else this.held += count;
    });
  }

  /** count renewals were answered (their answer sent). */
  answered(count: number): void {
    if (this.closed) return;
    this.held -= count;
    this.shared.answered(count);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.shared.forget(this, this.held);
    this.release();
  }
}
