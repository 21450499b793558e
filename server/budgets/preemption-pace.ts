// --preemption-interval: a resource is preempted at most once an interval on each replica. A preemption
// is for an orchestrator replacing a holder it knows is gone; one that preempts in a loop takes the
// resource from every holder and every waiter in turn, and writes the history of a grant each time. The
// interval is per resource, on this replica: with n replicas, a resource is preempted at most n times an
// interval (docs/preemption.md).
import { exhausted } from "./budget.js";

export class PreemptionPace {
  private readonly last = new Map<string, number>();

  constructor(
    /** ms; 0: no interval. */
    private readonly intervalMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Takes the resource's turn, or throws PREEMPTION_RATE_EXCEEDED with the time left. The function
   * returned gives the turn back (a preemption that changed nothing).
   */
  take(resource: string): () => void {
    if (this.intervalMs <= 0) return () => undefined;
    const now = this.now();
    const at = this.last.get(resource);
    if (at !== undefined && now - at < this.intervalMs) {
      const retryAfterMs = Math.ceil(this.intervalMs - (now - at));
      throw exhausted("preemptions", {
        who: `"${resource}" was preempted ${Math.floor(now - at)} ms ago`,
        limit: this.intervalMs,
        used: Math.floor(now - at),
        unit: "ms between preemptions",
        hint: `nothing was changed; preempt again in ${retryAfterMs} ms, or acquire with wait set to queue`,
        more: { resource, retry_after_ms: String(retryAfterMs) },
      });
    }
    if (this.last.size > 10_000) for (const [r, t] of this.last) if (now - t >= this.intervalMs) this.last.delete(r);
    this.last.set(resource, now);
    return () => {
      if (this.last.get(resource) === now) {
        if (at === undefined) this.last.delete(resource);
        else this.last.set(resource, at);
      }
    };
  }
}
