// Every call the server makes to etcd runs through here: timed for the observer (the metrics), and its
// failure classified once (classify.ts).
import { SpanKind } from "@opentelemetry/api";
import { classify } from "./classify.js";
import { inSpan, tracing } from "../tracing/tracer.js";

/**
 * Told of every etcd call: what it was, how long it took, its error if it failed, for the group commit's
 * requests how many writes it carried, and how many keys its answer carried (what a call's reads cost
 * grows with: a path whose reads grow with everything held shows here).
 */
export type EtcdCallObserver = (what: string, seconds: number, error?: unknown, writes?: number, keys?: number) => void;

export class EtcdCalls {
  constructor(private readonly observer: EtcdCallObserver = () => undefined) {}

  /** Runs one etcd call (writes: of the group commit, the writes it carries); its failure leaves as the domain's error. */
  run<T>(what: string, call: () => Promise<T>, writes?: number): Promise<T> {
    // A span per etcd request made for a call, as the call's child (none for the background's: the
    // compaction, the health probe); a group commit's says how many writes it carried.
    if (!tracing()) return this.timed(what, call, writes);
    const attributes = { "db.system.name": "etcd", "db.operation.name": what, ...(writes !== undefined && { "fencekeeper.etcd.writes": writes }) };
    return inSpan(`etcd ${what}`, attributes, () => this.timed(what, call, writes), SpanKind.CLIENT);
  }

  private async timed<T>(what: string, call: () => Promise<T>, writes?: number): Promise<T> {
    const started = performance.now();
    try {
      const result = await call();
      this.observer(what, (performance.now() - started) / 1000, undefined, writes, keysRead(result));
      return result;
    } catch (err) {
      this.observer(what, (performance.now() - started) / 1000, err, writes);
      throw classify(what, err);
    }
  }

  /** Tells the observer of a call timed elsewhere (a renewal on the keepalive stream). */
  observe(what: string, seconds: number, error?: unknown): void {
    this.observer(what, seconds, error);
  }
}

/** The keys an etcd answer carried: a range's, or those of a transaction's ranges. */
function keysRead(result: unknown): number {
  if (typeof result !== "object" || result === null) return 0;
  const r = result as { kvs?: unknown[]; responses?: { response_range?: { kvs?: unknown[] } | null }[] };
  if (Array.isArray(r.kvs)) return r.kvs.length;
  let n = 0;
  if (Array.isArray(r.responses)) for (const x of r.responses) n += x.response_range?.kvs?.length ?? 0;
  return n;
}
