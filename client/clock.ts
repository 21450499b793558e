// Time for lease deadlines. The monotonic clock cannot jump, but on Linux it stops while the machine is
// suspended, when etcd's clock does not; the wall clock counts a suspension but may be stepped. A
// deadline is therefore kept on both, and passed as soon as either clock says so.
export interface Instant {
  /** performance.now(): monotonic, ms. */
  readonly mono: number;
  /** Date.now(): wall clock, ms since the epoch. */
  readonly wall: number;
}

export const now = (): Instant => ({ mono: performance.now(), wall: Date.now() });

export const after = (t: Instant, ms: number): Instant => ({ mono: t.mono + ms, wall: t.wall + ms });

/** True when `t` is at or past `deadline` on either clock. */
export const reached = (t: Instant, deadline: Instant): boolean => t.mono >= deadline.mono || t.wall >= deadline.wall;

/** Milliseconds from `t` to `deadline`, by the clock that gives the least. */
export const until = (t: Instant, deadline: Instant): number => Math.min(deadline.mono - t.mono, deadline.wall - t.wall);
