// How long a lease may be assumed held: from the moment a renewal (or the Acquire) was SENT, plus the TTL
// etcd granted, minus a drift margin. An answer proves the lease was renewed at some point after it was
// sent, so counting from the send is safe however long the answer took; counting from its arrival is not.
// Once the deadline has passed nothing extends it: a late answer is never read as continued ownership.
import { after, now, reached, until, type Instant } from "./clock.js";

/** The default drift margin: 100 ms plus 1% of the TTL. */
export const defaultDriftMs = (ttlMs: number): number => 100 + ttlMs / 100;

export class Deadline {
  private end: Instant;
  private confirmedAt: Instant;

  constructor(
    sentAt: Instant,
    ttlMs: number,
    answeredAt: Instant,
    private readonly driftMs: (ttlMs: number) => number,
  ) {
    this.end = after(sentAt, ttlMs - driftMs(ttlMs));
    this.confirmedAt = answeredAt;
  }

  /**
   * Takes in a renewal sent at `sentAt` and answered at `at` with `ttlMs`. Returns false, and changes
   * nothing, if the deadline had already passed when the answer came.
   */
  confirm(sentAt: Instant, ttlMs: number, at: Instant = now()): boolean {
    if (reached(at, this.end)) return false;
    const end = after(sentAt, ttlMs - this.driftMs(ttlMs));
    this.end = { mono: Math.max(this.end.mono, end.mono), wall: Math.max(this.end.wall, end.wall) };
    this.confirmedAt = at;
    return true;
  }

  passed(at: Instant = now()): boolean {
    return reached(at, this.end);
  }

  /** Milliseconds left, by the clock that leaves the least; 0 or less once passed. */
  msLeft(at: Instant = now()): number {
    return until(at, this.end);
  }

  /** The deadline as a wall-clock date. */
  get validUntil(): Date {
    const at = now();
    return new Date(at.wall + until(at, this.end));
  }

  /** When the last confirmation (or the Acquire's answer) arrived. */
  get lastConfirmedAt(): Date {
    return new Date(this.confirmedAt.wall);
  }
}
