// Whether more than one caller is using this replica now: the load gauge's shrinking budgets
// (load-gauge.ts) apply only then, since a lone caller has nobody to be fair to. A caller counts from any
// call it made in the last second or two, not only from the KeepAlive streams it holds open: a client
// that renews by unary Renew, or on a stream opened for each renewal, holds no stream most of the time,
// and a flood beside it must be slowed all the same (measured: with no stream of the bystander's open,
// a 150-stream flood kept the loop to itself and the bystander's Renew took 1.3 s; bench/keepalive-flood.ts).
//
// A party is a principal, or without authentication a client address (server/auth/access.ts, partyKey):
// a client's unary calls and its streams come on connections of their own, and it does not contend with
// itself.
//
// Two callers are all it needs to know, so each window keeps at most two: its memory and its cost per
// call stay the same whatever the number of callers.

/** A window's length: a caller seen in this one or the one before counts as present. */
const WINDOW_MS = 1_000;

export class CallerPresence {
  private current: string[] = [];
  private previous: string[] = [];
  private windowStart: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.windowStart = now();
  }

  /** A call of this caller arrived. */
  seen(caller: string): void {
    this.turn();
    const c = this.current;
    if (c.length < 2 && c[0] !== caller) c.push(caller);
  }

  /**
   * Whether two callers or more made a call in the last one to two windows, counting also, when given, a
   * caller present otherwise (one whose streams are open: a stream is a call only when it starts).
   */
  several(also?: string): boolean {
    this.turn();
    const first = also ?? this.current[0] ?? this.previous[0];
    return this.current.some((c) => c !== first) || this.previous.some((c) => c !== first);
  }

  private turn(): void {
    const now = this.now();
    if (now - this.windowStart < WINDOW_MS) return;
    // A window passed with no call at all leaves nothing behind.
    this.previous = now - this.windowStart < 2 * WINDOW_MS ? this.current : [];
    this.current = [];
    this.windowStart = now;
  }
}
