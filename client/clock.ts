// Time for lease deadlines. The monotonic clock cannot jump, but on Linux it stops while the machine is
// suspended, when etcd's clock does not; the wall clock counts a suspension but may be stepped. A
// deadline is therefore kept on both (deadline.ts), and passed as soon as either clock says so.
export interface Instant {
  /** performance.now(): monotonic, ms. */
  readonly mono: number;
  /** Date.now(): wall clock, ms since the epoch. */
  readonly wall: number;
}

export const now = (): Instant => ({ mono: performance.now(), wall: Date.now() });
