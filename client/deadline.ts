// How long a lease may be assumed held: from the moment a renewal (or the Acquire) was SENT, plus the TTL
// etcd granted, minus a drift margin. An answer proves the lease was renewed at some point after it was
// sent, so counting from the send is safe however long the answer took; counting from its arrival is not.
// Once the deadline has passed nothing extends it: a late answer is never read as continued ownership.
// The deadline is kept on both clocks (see clock.ts) as plain numbers: a look or a confirmation allocates
// nothing, since a client with many leases makes thousands of them a second.
import type { Instant } from "./clock.js";

/** The default drift margin: 100 ms plus 1% of the TTL. */
export const defaultDriftMs = (ttlMs: number): number => 100 + ttlMs / 100;

export class Deadline {
  /** The deadline on the monotonic clock (performance.now(), ms) and on the wall clock (ms since the epoch). */
  #mono: number;
  #wall: number;
  #confirmedWall: number;

  constructor(
    sentAt: Instant,
    ttlMs: number,
    answeredAt: Instant,
    private readonly driftMs: (ttlMs: number) => number,
  ) {
    const ms = ttlMs - driftMs(ttlMs);
    this.#mono = sentAt.mono + ms;
    this.#wall = sentAt.wall + ms;
    this.#confirmedWall = answeredAt.wall;
  }

  /**
   * Takes in a renewal sent at `sentAt` and answered at `at` with `ttlMs`. Returns false, and changes
   * nothing, if the deadline had already passed when the answer came.
   */
  confirm(sentAt: Instant, ttlMs: number, at: Instant): boolean {
    if (at.mono >= this.#mono || at.wall >= this.#wall) return false;
    const ms = ttlMs - this.driftMs(ttlMs);
    this.#mono = Math.max(this.#mono, sentAt.mono + ms);
    this.#wall = Math.max(this.#wall, sentAt.wall + ms);
    this.#confirmedWall = at.wall;
    return true;
  }

  /** Whether the deadline has passed, by either clock, now. */
  passed(): boolean {
    return performance.now() >= this.#mono || Date.now() >= this.#wall;
  }

  /** Milliseconds left, by the clock that leaves the least; 0 or less once passed. */
  msLeft(): number {
    return Math.min(this.#mono - performance.now(), this.#wall - Date.now());
  }

  /** The deadline on the monotonic clock: what the scheduler orders deadlines by. */
  get mono(): number {
    return this.#mono;
  }

  /** The deadline as a wall-clock date. */
  get validUntil(): Date {
    return new Date(Date.now() + this.msLeft());
  }

  /** When the last confirmation (or the Acquire's answer) arrived. */
  get lastConfirmedAt(): Date {
    return new Date(this.#confirmedWall);
  }
}
