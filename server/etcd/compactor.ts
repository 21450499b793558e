// Compacts etcd's history, so that old revisions do not fill etcd: without it every put ever made stays
// in etcd's database (an overwrite keeps the old value as history), and a busy writer reaches
// --quota-backend-bytes (NOSPACE) however little it keeps at once.
//
// Revision-based, with two margins, so that what reads an old revision keeps working:
//  - retention: the last `retention` revisions are kept, whatever the time;
//  - one interval: nothing is compacted that was not already history an interval ago (the target is
//    at most the revision seen on the previous round), so that a page token and a watch that starts
//    from a snapshot's revision (Observe, a waiting Acquire) have at least an interval to use it, even
//    under a write rate that makes `retention` revisions pass in an instant.
// A page token older than that is answered FAILED_PRECONDITION (REVISION_COMPACTED), as before.
//
// Every replica runs one; compaction is idempotent (etcd refuses a revision already compacted, which is
// not an error here), and a replica compacts only when the target moved past what any replica compacted
// (etcd tells it in each refusal), with a random start so that replicas do not all ask at once.
import type { Etcd3 } from "etcd3";
import type { Logger } from "pino";
import type { EtcdCalls } from "./calls.js";
import { DomainError } from "../errors/errors.js";

export interface CompactorOptions {
  /** How often to compact, in ms; 0: never. */
  intervalMs: number;
  /** Revisions kept behind the current one. */
  retention: number;
  /** A key under the prefix, read to learn the current revision. */
  probeKey: Buffer;
}

export interface Compactor {
  /** The revision compacted last by this replica (or found compacted); 0 until then. */
  readonly compacted: bigint;
  stop(): void;
}

export function startCompactor(etcd: Etcd3, calls: EtcdCalls, o: CompactorOptions, log: Logger): Compactor {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let compacted = 0n;
  let previous = 0n;
  const round = async () => {
    const res = await calls.run("compaction", () => etcd.kv.range({ key: o.probeKey, count_only: true }));
    const current = BigInt(res.header.revision);
    // The first round only learns where etcd is: what it sees becomes compactable from the next one on.
    // So does a round that finds etcd's revision went back (an etcd that lost its data, or a new one).
    if (previous === 0n || current < previous) {
      compacted = 0n;
      previous = current;
      return;
    }
    let target = current - BigInt(o.retention);
    if (previous < target) target = previous;
    previous = current;
    if (target <= compacted || target <= 1n) return;
    try {
      await calls.run("compaction", () => etcd.kv.compact({ revision: target.toString() }));
      log.debug({ revision: String(target), current: String(current) }, "etcd compacted");
    } catch (err) {
      // Another replica compacted at or past it first.
      if (!(err instanceof DomainError && err.reason === "REVISION_COMPACTED")) throw err;
    }
    compacted = target;
  };
  const loop = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      round().then(
        () => loop(o.intervalMs),
        (err: unknown) => {
          log.warn({ err: err instanceof Error ? err.message : String(err) }, "etcd compaction failed; trying again at the next interval");
          loop(o.intervalMs);
        },
      );
    }, delay);
    timer.unref();
  };
  if (o.intervalMs > 0) loop(Math.floor(o.intervalMs * (0.5 + Math.random() / 2)));
  return {
    get compacted() {
      return compacted;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
