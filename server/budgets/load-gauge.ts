// How much of its message budget each KeepAlive caller gets now: all of it while the event loop has room,
// less while it is saturated. A caller's budget (keepalive-pace.ts, --max-stream-messages-per-second) is
// what one caller may send; a replica whose loop is busy with one caller's flood, at a rate within that
// budget, still answers everyone else late (measured: a bystander's renewal 4.8 s late under a 150-stream
// flood; bench/keepalive-flood.ts). So the budgets shrink together while the loop is busy, and grow back
// once it has room: a caller that sends little (a renewal every few seconds) stays far under even the
// smallest budget and is never slowed, while the one that fills the loop is read more slowly, which HTTP/2
// flow control passes back to its sender. Nothing is refused; a flooder is slowed, never cut off.
//
// The gauge is the event loop's utilization (the share of wall time it was busy), sampled every
// SAMPLE_MS: above BUSY the share is cut by a factor, below ROOM it grows back; it never falls below
// MIN_SHARE of the configured budget.
import { performance, type EventLoopUtilization } from "node:perf_hooks";

/** How often the loop's utilization is read. */
const SAMPLE_MS = 50;
/** Above this utilization, budgets shrink. */
const BUSY = 0.9;
/** Below it, they grow back. */
const ROOM = 0.6;
const SHRINK = 0.5;
const GROW = 1.1;
/** The smallest share: at the default budget of 5,000 messages a second, 50 a second (bursts of 100). */
export const MIN_SHARE = 0.01;

export interface LoadShare {
  /** The share of its budget a caller gets now, in [MIN_SHARE, 1]. */
  share(): number;
}

export class LoadGauge implements LoadShare {
  private current = 1;
  private last: EventLoopUtilization = performance.eventLoopUtilization();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly utilization: (since: EventLoopUtilization) => { now: EventLoopUtilization; busy: number } = sample) {
    this.timer = setInterval(() => this.tick(), SAMPLE_MS);
    this.timer.unref();
  }

  share(): number {
    return this.current;
  }

  /** One sample (exposed for the unit test, which drives it with utilizations of its choosing). */
  tick(): void {
    const { now, busy } = this.utilization(this.last);
    this.last = now;
    if (busy > BUSY) this.current = Math.max(MIN_SHARE, this.current * SHRINK);
    else if (busy < ROOM) this.current = Math.min(1, this.current * GROW);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function sample(since: EventLoopUtilization): { now: EventLoopUtilization; busy: number } {
  const now = performance.eventLoopUtilization();
  return { now, busy: performance.eventLoopUtilization(now, since).utilization };
}
